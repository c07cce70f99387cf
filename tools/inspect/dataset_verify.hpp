// `ffcv inspect --verify`: every sample of every field decoded by the rules the loader's
// decoders apply, the bad ones listed.
//
// Opening a file (Reader) validates its structure: tables, pointers, sizes. What it cannot see
// without decoding is a payload that is well placed but wrong inside: a JPEG that is damaged,
// truncated or of another size than its metadata says. verify_dataset() decodes each JPEG
// completely with the rules of jpeg_codec.hpp (validate_jpeg), and every other field with the
// field's own decoder, on all cores, and lists each failure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ffcv/reader.hpp"

namespace ffcv::tools {

struct BadSample {
  std::uint64_t sample = 0;
  std::string field;
  std::string reason;
};

struct VerifyReport {
  std::uint64_t samples = 0;
  std::vector<BadSample> bad;  // sorted by sample, then field order
  double seconds = 0;
};

// `workers`: 0 for every available core. `on_progress(done, total)` is called from the calling
// thread about ten times a second.
VerifyReport verify_dataset(const Reader& reader, int workers,
                            const std::function<void(std::uint64_t, std::uint64_t)>& on_progress);

std::string verify_text(const Reader& reader, const VerifyReport& report);
std::string verify_json(const Reader& reader, const VerifyReport& report);

}  // namespace ffcv::tools
