// NormalizeTable: the per-channel lookup tables that define `normalize`.
//
// Entry c * 256 + v is (v - mean[c]) / std[c], computed in double and rounded once to float32;
// the float16 table rounds that float32 to the nearest float16 (ties to even), as FFCV's tables
// do. The CPU operation and its GPU twin both read these tables, so they agree bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/format/dtype.hpp"

namespace ffcv {

struct NormalizeTable {
  std::size_t channels = 0;
  std::vector<float> f32;          // channels * 256 entries
  std::vector<std::uint16_t> f16;  // the same as float16 bit patterns
};

// The output type `text` names: float32 or float16, else ConfigError naming `step`.
DType normalize_dtype(const std::string& text, const std::string& step);

// Looks `count` uint8 values up, stored channel-innermost from channel 0 (whole pixels):
// output[i] = table entry (i % channels) * 256 + input[i], as float32 or as float16 bits.
void apply_normalize_table(const NormalizeTable& table, const std::uint8_t* input, float* output,
                           std::uint64_t count);
void apply_normalize_table(const NormalizeTable& table, const std::uint8_t* input,
                           std::uint16_t* output, std::uint64_t count);

// Throws ConfigError, naming `step`, unless mean and std have the same non-zero number of
// channels and every std is positive.
NormalizeTable make_normalize_table(const std::vector<double>& mean,
                                    const std::vector<double>& std_dev, const std::string& step);

}  // namespace ffcv
