#include "ffcv/fields/rgb_image_field.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/counter_random.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "value_access.hpp"

namespace ffcv {
namespace {

constexpr std::uint32_t kProportionStream = 0x70726f70;  // "prop"

struct Size {
  int width, height;
};

// FFCV's resizer: scale so the longer side is `max_side`, truncating, never upscaling.
Size stored_size(int width, int height, std::optional<int> max_side) {
  if (!max_side) return {width, height};
  const double ratio = static_cast<double>(*max_side) / std::max(width, height);
  if (ratio >= 1.0) return {width, height};
  return {std::max(1, static_cast<int>(ratio * width)),
          std::max(1, static_cast<int>(ratio * height))};
}

RgbImage resize_area(const RgbImage& image, Size size) {
  RgbImage resized;
  resized.width = size.width;
  resized.height = size.height;
  resized.pixels.resize(resized.byte_size());
  const cv::Mat source(image.height, image.width, CV_8UC3,
                       const_cast<std::uint8_t*>(image.pixels.data()));
  cv::Mat target(resized.height, resized.width, CV_8UC3, resized.pixels.data());
  cv::resize(source, target, target.size(), 0, 0, cv::INTER_AREA);
  return resized;
}

// Decodes a source JPEG at the smallest DCT scale that still covers twice the stored size
// (accurate IDCT, as source images are decoded elsewhere), then area-resizes the rest of the
// way. Keeping at least a 2x area reduction makes the result follow FFCV's full decode + area
// resize closely (DCT scaling alone filters differently); it still skips most of the decoding
// work for large sources.
RgbImage decode_source_jpeg(const JpegFile& file, std::optional<int> max_side) {
  const JpegInfo info = read_jpeg_info(file.bytes);
  const Size size = stored_size(info.width, info.height, max_side);
  RgbImage image = decode_jpeg(
      file.bytes, {.fast_dct = false, .min_width = 2 * size.width, .min_height = 2 * size.height});
  if (image.width == size.width && image.height == size.height) return image;
  return resize_area(image, size);
}

}  // namespace

ImageWriteMode parse_image_write_mode(const std::string& text) {
  if (text == "raw") return ImageWriteMode::kRaw;
  if (text == "jpg") return ImageWriteMode::kJpg;
  if (text == "smart") return ImageWriteMode::kSmart;
  if (text == "proportion") return ImageWriteMode::kProportion;
  throw ConfigError("unknown image write mode '" + text +
                    "' (expected raw, jpg, smart or proportion)");
}

const char* image_write_mode_name(ImageWriteMode mode) {
  switch (mode) {
    case ImageWriteMode::kRaw:
      return "raw";
    case ImageWriteMode::kJpg:
      return "jpg";
    case ImageWriteMode::kSmart:
      return "smart";
    case ImageWriteMode::kProportion:
      return "proportion";
  }
  return "?";
}

ImageMetadata ImageMetadata::load(const std::uint8_t* column) {
  return {static_cast<StoredImageMode>(column[0]), load_le<std::uint16_t>(column + 1),
          load_le<std::uint16_t>(column + 3), load_le<std::uint64_t>(column + 5)};
}

void ImageMetadata::store(std::uint8_t* column) const {
  column[0] = static_cast<std::uint8_t>(mode);
  store_le(column + 1, width);
  store_le(column + 3, height);
  store_le(column + 5, data_ptr);
}

RgbImageField::RgbImageField(RgbImageOptions options) : options_(options) {
  if (options_.jpeg_quality < 1 || options_.jpeg_quality > 100) {
    throw ConfigError("JPEG quality " + std::to_string(options_.jpeg_quality) +
                      " is outside 1..100");
  }
  if (options_.compress_probability < 0 || options_.compress_probability > 1) {
    throw ConfigError("compress probability must be within [0, 1]");
  }
  if (options_.max_resolution && *options_.max_resolution < 1) {
    throw ConfigError("max resolution must be at least 1");
  }
}

bool RgbImageField::choose_jpeg(const RgbImage& image, const EncodeContext& context) const {
  switch (options_.write_mode) {
    case ImageWriteMode::kRaw:
      return false;
    case ImageWriteMode::kJpg:
      return true;
    case ImageWriteMode::kSmart:
      return options_.smart_threshold && image.byte_size() > *options_.smart_threshold;
    case ImageWriteMode::kProportion:
      return uniform01(context.seed, kProportionStream, context.sample_index, 0) <
             options_.compress_probability;
  }
  return false;
}

void RgbImageField::encode(const FieldValue& value, std::uint8_t* column,
                           std::vector<EncodedAllocation>& heap,
                           const EncodeContext& context) const {
  RgbImage converted;  // holds the pixels when they are not the input's own
  const RgbImage* image = &converted;
  if (const auto* file = std::get_if<JpegFile>(&value)) {
    converted = decode_source_jpeg(*file, options_.max_resolution);
  } else {
    const RgbImage& input = expect_value<RgbImage>(value, "RGBImage", "an RGB image");
    if (input.width <= 0 || input.height <= 0 || input.pixels.size() != input.byte_size()) {
      throw EncodeError("RGBImage value of " + std::to_string(input.width) + "x" +
                        std::to_string(input.height) + " holds " +
                        std::to_string(input.pixels.size()) + " bytes, expected width*height*3");
    }
    const Size size = stored_size(input.width, input.height, options_.max_resolution);
    if (size.width == input.width && size.height == input.height) {
      image = &input;
    } else {
      converted = resize_area(input, size);
    }
  }
  if (image->width > kMaxSide || image->height > kMaxSide) {
    throw EncodeError("image of " + std::to_string(image->width) + "x" +
                      std::to_string(image->height) +
                      " exceeds the format's 65535-pixel side limit (set a max resolution)");
  }
  ImageMetadata metadata;
  metadata.width = static_cast<std::uint16_t>(image->width);
  metadata.height = static_cast<std::uint16_t>(image->height);
  if (choose_jpeg(*image, context)) {
    metadata.mode = StoredImageMode::kJpg;
    heap.push_back({encode_jpeg(*image, options_.jpeg_quality), 5});
  } else {
    metadata.mode = StoredImageMode::kRaw;
    heap.push_back({image == &converted ? std::move(converted.pixels) : image->pixels, 5});
  }
  metadata.store(column);
}

std::string RgbImageField::check_column(const std::uint8_t* column) const {
  const ImageMetadata metadata = ImageMetadata::load(column);
  if (metadata.mode != StoredImageMode::kJpg && metadata.mode != StoredImageMode::kRaw) {
    return "image mode " + std::to_string(column[0]) + " is neither jpg (0) nor raw (1)";
  }
  if (metadata.width == 0 || metadata.height == 0) {
    return "image size " + std::to_string(metadata.width) + "x" + std::to_string(metadata.height) +
           " is empty";
  }
  return {};
}

std::vector<HeapRef> RgbImageField::heap_refs(const std::uint8_t* column) const {
  const ImageMetadata metadata = ImageMetadata::load(column);
  if (metadata.mode == StoredImageMode::kRaw) {
    return {{metadata.data_ptr, std::uint64_t{metadata.width} * metadata.height * 3}};
  }
  return {{metadata.data_ptr, std::nullopt}};
}

FieldValue RgbImageField::decode(const std::uint8_t* column, const PayloadReader& heap) const {
  const ImageMetadata metadata = ImageMetadata::load(column);
  const auto payload = heap.payload(metadata.data_ptr);
  if (metadata.mode == StoredImageMode::kRaw) {
    return RgbImage{metadata.width, metadata.height,
                    std::vector<std::uint8_t>(payload.begin(), payload.end())};
  }
  RgbImage image = decode_jpeg(payload);
  if (image.width != metadata.width || image.height != metadata.height) {
    throw EncodeError("JPEG of " + std::to_string(image.width) + "x" +
                      std::to_string(image.height) + " does not match its metadata size " +
                      std::to_string(metadata.width) + "x" + std::to_string(metadata.height));
  }
  return image;
}

std::string RgbImageField::describe(const std::uint8_t* column) const {
  const ImageMetadata metadata = ImageMetadata::load(column);
  const char* mode = metadata.mode == StoredImageMode::kJpg   ? "jpg"
                     : metadata.mode == StoredImageMode::kRaw ? "raw"
                                                              : "invalid";
  return std::string("{\"mode\": \"") + mode + "\", \"width\": " + std::to_string(metadata.width) +
         ", \"height\": " + std::to_string(metadata.height) +
         ", \"data_ptr\": " + std::to_string(metadata.data_ptr) + "}";
}

}  // namespace ffcv
