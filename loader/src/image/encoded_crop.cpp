#include "ffcv/image/encoded_crop.hpp"

#include <cstring>
#include <string>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"

namespace ffcv {

void EncodedCropHeader::store(std::uint8_t* record) const {
  std::memset(record, 0, kEncodedCropHeaderBytes);
  store_le<std::uint32_t>(record + 0, static_cast<std::uint32_t>(kind));
  store_le<std::uint32_t>(record + 4, static_cast<std::uint32_t>(out_height));
  store_le<std::uint32_t>(record + 8, static_cast<std::uint32_t>(out_width));
  store_le<std::uint32_t>(record + 12, static_cast<std::uint32_t>(frame_height));
  store_le<std::uint32_t>(record + 16, static_cast<std::uint32_t>(frame_width));
  store_le<std::int32_t>(record + 20, window.top);
  store_le<std::int32_t>(record + 24, window.left);
  store_le<std::int32_t>(record + 28, window.height);
  store_le<std::int32_t>(record + 32, window.width);
  store_le<std::uint32_t>(record + 36, flip ? 1 : 0);
  store_le<std::uint32_t>(record + 40, hardware_ok ? 1 : 0);
  store_le<std::uint32_t>(record + 44, static_cast<std::uint32_t>(components));
  store_le<std::uint64_t>(record + 48, payload_bytes);
  store_le<std::uint64_t>(record + 56, sample);
}

EncodedCropHeader EncodedCropHeader::load(std::span<const std::uint8_t> record) {
  if (record.size() < kEncodedCropHeaderBytes) {
    throw Error("encoded crop record of " + std::to_string(record.size()) +
                " bytes is shorter than its " + std::to_string(kEncodedCropHeaderBytes) +
                "-byte header");
  }
  const std::uint8_t* bytes = record.data();
  EncodedCropHeader header;
  const auto kind = load_le<std::uint32_t>(bytes);
  header.out_height = static_cast<int>(load_le<std::uint32_t>(bytes + 4));
  header.out_width = static_cast<int>(load_le<std::uint32_t>(bytes + 8));
  header.frame_height = static_cast<int>(load_le<std::uint32_t>(bytes + 12));
  header.frame_width = static_cast<int>(load_le<std::uint32_t>(bytes + 16));
  header.window = {load_le<std::int32_t>(bytes + 20), load_le<std::int32_t>(bytes + 24),
                   load_le<std::int32_t>(bytes + 28), load_le<std::int32_t>(bytes + 32)};
  header.flip = load_le<std::uint32_t>(bytes + 36) != 0;
  header.hardware_ok = load_le<std::uint32_t>(bytes + 40) != 0;
  header.components = static_cast<int>(load_le<std::uint32_t>(bytes + 44));
  header.payload_bytes = load_le<std::uint64_t>(bytes + 48);
  header.sample = load_le<std::uint64_t>(bytes + 56);
  const std::string where = "encoded crop record of sample " + std::to_string(header.sample);
  if (kind != 1 && kind != 2) {
    throw Error(where + ": unknown kind " + std::to_string(kind));
  }
  header.kind = static_cast<EncodedCropKind>(kind);
  const auto side_ok = [](int side) { return side >= 1 && side <= 65535; };
  if (!side_ok(header.out_height) || !side_ok(header.out_width) || !side_ok(header.frame_height) ||
      !side_ok(header.frame_width)) {
    throw Error(where + ": a side outside 1..65535");
  }
  const CropWindow& w = header.window;
  // Compared by subtraction: top + height could overflow an int.
  if (w.top < 0 || w.left < 0 || w.height < 1 || w.width < 1 || w.top >= header.frame_height ||
      w.left >= header.frame_width || w.height > header.frame_height - w.top ||
      w.width > header.frame_width - w.left) {
    throw Error(where + ": crop window outside its " + std::to_string(header.frame_height) + " x " +
                std::to_string(header.frame_width) + " frame");
  }
  const std::uint64_t room = record.size() - kEncodedCropHeaderBytes;
  const std::uint64_t pixels = std::uint64_t(header.out_height) * header.out_width * 3;
  if (header.payload_bytes > room ||
      (header.kind == EncodedCropKind::kPixels && header.payload_bytes != pixels) ||
      header.payload_bytes == 0) {
    throw Error(where + ": payload of " + std::to_string(header.payload_bytes) +
                " bytes does not fit its record of " + std::to_string(record.size()));
  }
  return header;
}

}  // namespace ffcv
