// The values a dataset holds, one per field per sample, on their way in (writer) and out
// (inspection, tests, default decoding).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ffcv/format/dtype.hpp"

namespace ffcv {

// An 8-bit RGB image, rows top to bottom, pixels interleaved R, G, B (H x W x 3, C order).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // width * height * 3 bytes

  std::size_t byte_size() const { return static_cast<std::size_t>(width) * height * 3; }
};

// An n-dimensional array's raw bytes, with its element type and shape (C order).
struct NdArray {
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint8_t> bytes;
};

// An image still in its JPEG file encoding. A source hands this over instead of decoded pixels
// so that the image field decodes it itself: when the field will downscale anyway (max
// resolution), it decodes at a reduced DCT scale and resizes less, which is much cheaper.
struct JpegFile {
  std::vector<std::uint8_t> bytes;
};

// A JSON document as text (without FFCV's trailing NUL).
struct JsonText {
  std::string text;
};

using Bytes = std::vector<std::uint8_t>;

// One field's value for one sample. monostate means "no value" and is refused by the writer.
using FieldValue = std::variant<std::monostate, std::int64_t, double, RgbImage, NdArray, Bytes,
                                JsonText, JpegFile>;

// Human-readable name of the alternative a value holds ("int", "image", ...), for errors.
const char* value_kind_name(const FieldValue& value);

}  // namespace ffcv
