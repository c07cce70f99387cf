// What encoding a write's samples cost and did: seconds per stage and what became of the source
// JPEGs. `ffcv write --json` prints it and the sources sidecar keeps it, so a user can see where
// a write spends its time and how many images were stored as they came.
//
// Each sample is encoded with a tally of its own (EncodeContext::tally), which the writer adds to
// the write's total only when it places the sample: a sample left out leaves no trace.
#pragma once

#include <array>
#include <cstdint>

#include "ffcv/image/jpeg_coding.hpp"

namespace ffcv {

struct EncodeTally {
  double decode_seconds = 0;     // decoding source JPEGs (other formats decode when loaded)
  double resize_seconds = 0;     // resizing to max_resolution
  double compress_seconds = 0;   // JPEG encoding
  double check_seconds = 0;      // decoding a kept JPEG's every byte to check it is intact
  std::uint64_t dct_scaled = 0;  // source JPEGs decoded at 1/2, 1/4 or 1/8 of their size
  // Source JPEGs stored as JPEG, by what became of them: kNone counts those kept as they came,
  // the other reasons those decoded and encoded again (jpeg_coding.hpp).
  std::array<std::uint64_t, kReencodeReasonCount> stored_jpegs{};

  std::uint64_t kept_as_is() const { return stored_jpegs[static_cast<int>(ReencodeReason::kNone)]; }
  void add(const EncodeTally& other) {
    decode_seconds += other.decode_seconds;
    resize_seconds += other.resize_seconds;
    compress_seconds += other.compress_seconds;
    check_seconds += other.check_seconds;
    dct_scaled += other.dct_scaled;
    for (std::size_t r = 0; r < stored_jpegs.size(); ++r) stored_jpegs[r] += other.stored_jpegs[r];
  }
};

}  // namespace ffcv
