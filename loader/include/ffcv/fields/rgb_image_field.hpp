// RGBImageField (type id 2): an 8-bit RGB image per sample, stored as JPEG or raw pixels.
//
// Metadata column (13 bytes, packed): mode u8 (0 = jpg, 1 = raw), width u16, height u16,
// data_ptr u64. Raw payloads are exactly height*width*3 bytes. As in FFCV, the writer options
// are not stored in the file: the argument blob is all zeros.
//
// Write modes (FFCV's semantics):
//   raw         always raw pixels
//   jpg         always JPEG (4:2:0 chroma, baseline, `jpeg_quality`)
//   smart       JPEG when the raw size (H*W*3 bytes) exceeds `smart_threshold`, raw otherwise
//               (raw always when no threshold is set); unlike FFCV it only encodes JPEG when used
//   proportion  JPEG with probability `compress_probability`, drawn from (seed, sample index)
// Images whose longer side exceeds `max_resolution` are downscaled (area filter) so that side
// equals it, the other side truncated as FFCV does; images are never upscaled.
//
// Two shortcuts do less work per image than FFCV's writer, with the same output rules; both are
// off with `same_as_ffcv`, which encodes exactly as Python FFCV's writer does:
//  - A source JPEG (a JpegFile value) that is to be stored as JPEG is stored as its own bytes
//    when nothing would change them: no resize, coded as stored JPEGs are (8-bit Huffman,
//    baseline or progressive, YCbCr 4:2:0) and quantised at most as finely as `jpeg_quality`
//    would (jpeg_coding.hpp). Its every byte is still decoded once to check it is intact, and
//    bytes after its end-of-image marker are not stored.
//  - A source JPEG is decoded at 1/2, 1/4 or 1/8 scale when that still covers the stored size
//    (libjpeg-turbo's SIMD scaled IDCTs), and resized with the loader's SIMD area resampler
//    (resize.hpp) instead of OpenCV's INTER_AREA, which is scalar for non-integer ratios and took
//    more time than the decode. Pixels differ from FFCV's by at most 1 level where no DCT scaling
//    happens, and by the filter difference where it does (tests state the bounds).
// With same_as_ffcv the JPEG is decoded in full with the accurate IDCT and resized with
// cv::resize(INTER_AREA), FFCV's path, and every JPEG is encoded again.
#pragma once

#include <optional>
#include <utility>

#include "ffcv/field.hpp"
#include "ffcv/image/jpeg_coding.hpp"

namespace ffcv {

enum class ImageWriteMode { kRaw, kJpg, kSmart, kProportion };

// Parses "raw", "jpg", "smart", "proportion". Throws ConfigError otherwise.
ImageWriteMode parse_image_write_mode(const std::string& text);
const char* image_write_mode_name(ImageWriteMode mode);

struct RgbImageOptions {
  ImageWriteMode write_mode = ImageWriteMode::kRaw;
  std::optional<int> max_resolution;
  int jpeg_quality = 90;
  double compress_probability = 0.5;
  std::optional<std::uint64_t> smart_threshold;  // bytes (H*W*3), as FFCV's code compares
  bool same_as_ffcv = false;                     // no shortcuts (see above)
};

// How one sample is stored, read from its metadata column.
enum class StoredImageMode : std::uint8_t { kJpg = 0, kRaw = 1 };

struct ImageMetadata {
  StoredImageMode mode = StoredImageMode::kRaw;
  std::uint16_t width = 0;
  std::uint16_t height = 0;
  std::uint64_t data_ptr = 0;

  static ImageMetadata load(const std::uint8_t* column);
  void store(std::uint8_t* column) const;
};

class RgbImageField final : public Field {
 public:
  static constexpr std::uint8_t kTypeId = 2;
  static constexpr int kMaxSide = 65535;  // width and height are u16

  explicit RgbImageField(RgbImageOptions options = {});  // throws ConfigError on bad options
  const RgbImageOptions& options() const { return options_; }
  // The (width, height) an image of width x height is stored at: downscaled as FFCV does, its
  // longer side to max_resolution (sides truncated), never upscaled. A source that stores
  // coordinates beside the image (boxes) scales them by it.
  std::pair<int, int> stored_size(int width, int height) const;

  std::uint8_t type_id() const override { return kTypeId; }
  std::string type_name() const override { return "RGBImage"; }
  ColumnType column_type() const override { return {13, 1}; }
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  std::string check_column(const std::uint8_t* column) const override;
  std::vector<HeapRef> heap_refs(const std::uint8_t* column) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
  std::string describe(const std::uint8_t* column) const override;

 private:
  bool choose_jpeg(int width, int height, const EncodeContext& context) const;
  bool store_source_jpeg(const JpegFile& file, const JpegCoding& coding, std::uint8_t* column,
                         std::vector<EncodedAllocation>& heap, const EncodeContext& context,
                         EncodeTally& tally) const;
  RgbImageOptions options_;
};

}  // namespace ffcv
