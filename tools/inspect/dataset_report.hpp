// What `ffcv inspect` reports about a .beton file, computed once and rendered as text or JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ffcv/reader.hpp"

namespace ffcv::tools {

struct FieldReport {
  std::string name;
  std::string type;
  std::uint64_t heap_bytes = 0;  // payload bytes of this field over all samples
  // RGBImage fields only:
  std::map<std::string, std::uint64_t> image_modes;         // "jpg"/"raw" -> count
  std::map<std::uint64_t, std::uint64_t> width_histogram;   // bucket start -> count
  std::map<std::uint64_t, std::uint64_t> height_histogram;  // bucket start -> count
  std::uint64_t min_width = 0, max_width = 0, min_height = 0, max_height = 0;
  double mean_width = 0, mean_height = 0;
  std::string args_summary;  // e.g. NDArray dtype and shape
};

struct DatasetReport {
  std::string path;
  std::uint64_t file_size = 0;
  std::uint64_t num_samples = 0;
  std::uint64_t page_size = 0;
  std::uint64_t num_pages = 0;  // distinct data pages holding at least one allocation
  std::uint64_t num_allocations = 0;
  std::uint64_t record_size = 0;
  std::vector<FieldReport> fields;

  static DatasetReport build(const Reader& reader);
  std::string to_text() const;
  std::string to_json() const;
};

// Width of the size-histogram buckets, in pixels.
inline constexpr std::uint64_t kSizeBucket = 64;

}  // namespace ffcv::tools
