#include "ffcv/fields/rgb_image_field.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/resize.hpp"
#include "ffcv/util/counter_random.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "value_access.hpp"

namespace ffcv {
namespace {

constexpr std::uint32_t kProportionStream = 0x70726f70;  // "prop"

struct Size {
  int width, height;
};

// FFCV's resizer: scale so the longer side is `max_side`, truncating, never upscaling.
Size downscaled_size(int width, int height, std::optional<int> max_side) {
  if (!max_side) return {width, height};
  const double ratio = static_cast<double>(*max_side) / std::max(width, height);
  if (ratio >= 1.0) return {width, height};
  return {std::max(1, static_cast<int>(ratio * width)),
          std::max(1, static_cast<int>(ratio * height))};
}

// The area filter from the region [0, extent_x) x [0, extent_y) of `image` (its whole extent when
// not given) to `size`: OpenCV's INTER_AREA (FFCV's) on whole images, or the loader's SIMD
// resampler, which agrees with it within 1 level on whole images (resize.hpp) and also takes
// fractional extents.
RgbImage resize_area(const RgbImage& image, Size size, bool like_opencv, ByteBufferPool* buffers,
                     double extent_x = 0, double extent_y = 0) {
  RgbImage resized;
  resized.width = size.width;
  resized.height = size.height;
  resized.pixels = take_buffer(buffers, resized.byte_size());
  if (like_opencv) {
    const cv::Mat source(image.height, image.width, CV_8UC3,
                         const_cast<std::uint8_t*>(image.pixels.data()));
    cv::Mat target(resized.height, resized.width, CV_8UC3, resized.pixels.data());
    cv::resize(source, target, target.size(), 0, 0, cv::INTER_AREA);
    return resized;
  }
  const ResizeSource region{image.pixels.data(),
                            image.width,
                            image.height,
                            static_cast<std::size_t>(image.width) * 3,
                            0,
                            0,
                            extent_x > 0 ? extent_x : static_cast<double>(image.width),
                            extent_y > 0 ? extent_y : static_cast<double>(image.height)};
  thread_local std::vector<std::uint8_t> scratch;  // kept: resize_rgb sizes it per call
  resize_rgb(region, resized.pixels.data(), size.width, size.height, Interpolation::kArea, scratch);
  return resized;
}

// The DCT scale 1/d a source frame may be decoded at for `size`: the largest d of 8, 4, 2 (or 1)
// such that the frame is at least d times the stored size on both axes, so that the scaled
// image still covers the stored size and the resize only shrinks.
int dct_denominator(Size frame, Size size) {
  for (const int denominator : {8, 4, 2}) {
    if (frame.width >= denominator * size.width && frame.height >= denominator * size.height) {
      return denominator;
    }
  }
  return 1;
}

// Decodes a source JPEG with the accurate IDCT (as PIL and OpenCV decode source images) and
// resizes it to its stored size. Without same_as_ffcv the decode runs at the smallest of the
// scales 1/2, 1/4, 1/8 that still covers the stored size (dct_denominator).
RgbImage decode_source_jpeg(const JpegFile& file, Size frame, std::optional<int> max_side,
                            bool same_as_ffcv, EncodeTally& tally, ByteBufferPool* buffers) {
  const Size size = downscaled_size(frame.width, frame.height, max_side);
  const int denominator = same_as_ffcv ? 1 : dct_denominator(frame, size);
  Stopwatch watch;
  // libjpeg rounds a scaled side up: ceil(side / d) is the size of the 1/d decode.
  RgbImage image = decode_jpeg(file.bytes,
                               {.fast_dct = false,
                                .min_width = (frame.width + denominator - 1) / denominator,
                                .min_height = (frame.height + denominator - 1) / denominator,
                                .power_of_two_scales = true},
                               buffers);
  tally.decode_seconds += watch.restart();
  if (denominator > 1) ++tally.dct_scaled;
  if (image.width == size.width && image.height == size.height) return image;
  // The last row and column of a scaled decode cover less of the frame than the others; the
  // resize reads the frame's exact extent, so nothing shifts by up to a pixel.
  RgbImage resized =
      resize_area(image, size, same_as_ffcv, buffers, double(frame.width) / denominator,
                  double(frame.height) / denominator);
  tally.resize_seconds += watch.seconds();
  give_buffer(buffers, std::move(image.pixels));
  return resized;
}

void check_side_limit(int width, int height) {
  if (width > RgbImageField::kMaxSide || height > RgbImageField::kMaxSide) {
    throw EncodeError("image of " + std::to_string(width) + "x" + std::to_string(height) +
                      " exceeds the format's 65535-pixel side limit (set a max resolution)");
  }
}

}  // namespace

std::pair<int, int> RgbImageField::stored_size(int width, int height) const {
  const Size size = downscaled_size(width, height, options_.max_resolution);
  return {size.width, size.height};
}

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

bool RgbImageField::choose_jpeg(int width, int height, const EncodeContext& context) const {
  switch (options_.write_mode) {
    case ImageWriteMode::kRaw:
      return false;
    case ImageWriteMode::kJpg:
      return true;
    case ImageWriteMode::kSmart:
      return options_.smart_threshold &&
             std::uint64_t(width) * std::uint64_t(height) * 3 > *options_.smart_threshold;
    case ImageWriteMode::kProportion:
      return uniform01(context.seed, kProportionStream, context.sample_index, 0) <
             options_.compress_probability;
  }
  return false;
}

// A source JPEG (coded as `coding` says) stored as JPEG: kept as it came when nothing would
// change it (see the header), after decoding its every byte once. Returns false when it is to be
// decoded and encoded again (or stored raw), counting why in the tally.
bool RgbImageField::store_source_jpeg(const JpegFile& file, const JpegCoding& coding,
                                      std::uint8_t* column, std::vector<EncodedAllocation>& heap,
                                      const EncodeContext& context, EncodeTally& tally) const {
  const Size size = downscaled_size(coding.width, coding.height, options_.max_resolution);
  if (!choose_jpeg(size.width, size.height, context)) return false;
  const ReencodeReason reason =
      options_.same_as_ffcv
          ? ReencodeReason::kSameAsFfcv
          : reason_to_reencode(coding, size.width, size.height, options_.jpeg_quality);
  ++tally.stored_jpegs[static_cast<int>(reason)];
  if (reason != ReencodeReason::kNone) return false;
  // Stored up to its end-of-image marker: bytes after it (another file appended, padding) are
  // no part of the image and would only grow the dataset.
  const std::span<const std::uint8_t> stream =
      std::span<const std::uint8_t>(file.bytes).first(jpeg_stream_end(file.bytes));
  const Stopwatch watch;
  validate_jpeg(stream);
  tally.check_seconds += watch.seconds();
  // Kept means not resized: the stored size is the frame's, which a JPEG holds in 16 bits.
  heap.push_back({std::vector<std::uint8_t>(stream.begin(), stream.end()), 5});
  ImageMetadata{StoredImageMode::kJpg, static_cast<std::uint16_t>(size.width),
                static_cast<std::uint16_t>(size.height), 0}
      .store(column);
  return true;
}

void RgbImageField::encode(const FieldValue& value, std::uint8_t* column,
                           std::vector<EncodedAllocation>& heap,
                           const EncodeContext& context) const {
  EncodeTally uncounted;
  EncodeTally& tally = context.tally != nullptr ? *context.tally : uncounted;
  RgbImage converted;  // holds the pixels when they are not the input's own
  const RgbImage* image = &converted;
  if (const auto* file = std::get_if<JpegFile>(&value)) {
    const JpegCoding coding = read_jpeg_coding(file->bytes);
    if (store_source_jpeg(*file, coding, column, heap, context, tally)) return;
    converted = decode_source_jpeg(*file, {coding.width, coding.height}, options_.max_resolution,
                                   options_.same_as_ffcv, tally, context.buffers);
  } else {
    const RgbImage& input = expect_value<RgbImage>(value, "RGBImage", "an RGB image");
    if (input.width <= 0 || input.height <= 0 || input.pixels.size() != input.byte_size()) {
      throw EncodeError("RGBImage value of " + std::to_string(input.width) + "x" +
                        std::to_string(input.height) + " holds " +
                        std::to_string(input.pixels.size()) + " bytes, expected width*height*3");
    }
    const Size size = downscaled_size(input.width, input.height, options_.max_resolution);
    if (size.width == input.width && size.height == input.height) {
      image = &input;
    } else {
      const Stopwatch watch;
      converted = resize_area(input, size, options_.same_as_ffcv, context.buffers);
      tally.resize_seconds += watch.seconds();
    }
  }
  check_side_limit(image->width, image->height);
  ImageMetadata metadata;
  metadata.width = static_cast<std::uint16_t>(image->width);
  metadata.height = static_cast<std::uint16_t>(image->height);
  if (choose_jpeg(image->width, image->height, context)) {
    metadata.mode = StoredImageMode::kJpg;
    const Stopwatch watch;
    heap.push_back({encode_jpeg(*image, options_.jpeg_quality, context.buffers), 5});
    tally.compress_seconds += watch.seconds();
    if (image == &converted) give_buffer(context.buffers, std::move(converted.pixels));
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
