// Internal: what the crop decoders share, whether they decode on the CPU (crop_decoders.cpp) or
// leave the decode to the GPU (encoded_crop_decoders.cpp): how a window is chosen, the output
// size and pair parameters they read, and the mirror of a finished RGB image.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "ffcv/crop.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/resize.hpp"
#include "ffcv/payload_reader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/op_params.hpp"
#include "ffcv/steps/operation.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

// torchvision's random-resized crop (`scale`, `ratio`) or the centred square of `ratio` x the
// short side (ffcv/crop.hpp), as one value a decoder holds.
class CropWindowRule {
 public:
  // Throws ConfigError for parameters random_resized_crop would refuse; `op` names the step.
  static CropWindowRule random(std::array<double, 2> scale, std::array<double, 2> ratio,
                               const char* op) {
    validate_random_crop_params(scale, ratio, op);
    return CropWindowRule(true, scale, ratio, 0.0);
  }
  // Throws ConfigError unless 0 < ratio <= 1.
  static CropWindowRule centered(double ratio) {
    center_crop(1000, 1000, ratio);  // validates the ratio
    return CropWindowRule(false, {}, {}, ratio);
  }

  // The window of a `height` x `width` image; random windows draw the sample's numbers 0..39
  // of `context`, shifted by `first_draw`.
  CropWindow choose(int height, int width, const SampleContext& context,
                    std::uint32_t first_draw = 0) const {
    if (!random_) return center_crop(height, width, center_ratio_);
    return random_resized_crop(height, width, scale_, ratio_,
                               [&](std::uint32_t n) { return context.uniform(first_draw + n); });
  }

 private:
  CropWindowRule(bool random, std::array<double, 2> scale, std::array<double, 2> ratio,
                 double center_ratio)
      : random_(random), scale_(scale), ratio_(ratio), center_ratio_(center_ratio) {}

  bool random_;
  std::array<double, 2> scale_, ratio_;
  double center_ratio_;
};

// Where a window cut from an image and resized to out_width x out_height puts the image's points.
inline PlaneMap crop_map(const CropWindow& window, int out_height, int out_width) {
  const double scale_x = static_cast<double>(out_width) / window.width;
  const double scale_y = static_cast<double>(out_height) / window.height;
  return {scale_x,
          -window.left * scale_x,
          scale_y,
          -window.top * scale_y,
          static_cast<double>(out_width),
          static_cast<double>(out_height)};
}

// A parameter declared as two numbers.
inline std::array<double, 2> number_pair(const OpParams& params, const std::string& key) {
  const std::vector<double> values = params.require_list(key);
  if (values.size() != 2) throw ConfigError("parameter '" + key + "' needs two numbers");
  return {values[0], values[1]};
}

// Throws ConfigError naming `op` unless both output sides are within 1..65535.
inline void check_crop_output_size(std::int64_t height, std::int64_t width, const std::string& op) {
  if (height < 1 || width < 1 || height > 65535 || width > 65535) {
    throw ConfigError(op + ": give the output `size` (or `height` and `width`), 1..65535");
  }
}

// The output (height, width) of a crop decoder: `height` and `width`, each defaulting to `size`,
// which has no default. ConfigError outside 1..65535, naming `op`.
inline std::pair<int, int> crop_output_size(const OpParams& params, const std::string& op) {
  const std::int64_t size = params.get_int("size", 0);
  const std::int64_t height = params.get_int("height", size);
  const std::int64_t width = params.get_int("width", size);
  check_crop_output_size(height, width, op);
  return {static_cast<int>(height), static_cast<int>(width)};
}

// The resize source of `window` of a raw (uncompressed) stored image, straight from its page.
inline ResizeSource raw_resize_source(const ImageMetadata& image, const PayloadReader& payloads,
                                      const CropWindow& window) {
  const std::uint64_t bytes = std::uint64_t{image.width} * image.height * 3;
  return {payloads.payload(image.data_ptr, bytes).data(),
          image.width,
          image.height,
          std::size_t{image.width} * 3,
          double(window.left),
          double(window.top),
          double(window.width),
          double(window.height)};
}

// Throws ConfigError unless `field` of `reader` is an RGBImage field, naming decoder `op`.
inline void require_rgb_image_field(const Reader& reader, std::size_t field,
                                    const std::string& op) {
  if (dynamic_cast<const RgbImageField*>(reader.fields().at(field).field.get()) == nullptr) {
    throw ConfigError(op + " decoder needs an RGBImage field, '" + reader.fields()[field].name +
                      "' is " + reader.fields()[field].field->type_name());
  }
}

// Mirrors a uint8 RGB image of `height` x `width` left-right, in place.
inline void mirror_rgb_rows(std::uint8_t* pixels, int height, int width) {
  for (int y = 0; y < height; ++y) {
    std::uint8_t* row = pixels + std::size_t(y) * width * 3;
    for (int a = 0, b = width - 1; a < b; ++a, --b) {
      for (int c = 0; c < 3; ++c) std::swap(row[a * 3 + c], row[b * 3 + c]);
    }
  }
}

}  // namespace ffcv
