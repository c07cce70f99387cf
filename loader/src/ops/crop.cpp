// Crop windows: FFCV's get_random_crop / get_center_crop semantics (see ffcv/crop.hpp).
#include "ffcv/crop.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

// Python's round(): to the nearest integer, halves to the even neighbour. Written out rather than
// relying on std::nearbyint, which follows whatever floating-point rounding mode is current.
double round_half_even(double x) {
  const double below = std::floor(x);
  const double fraction = x - below;  // exact for every finite double
  if (fraction > 0.5) return below + 1;
  if (fraction < 0.5) return below;
  return std::fmod(below, 2.0) == 0 ? below : below + 1;
}

// numpy's uniform(low, high) given a draw u in [0, 1).
double uniform_between(double low, double high, double u) { return low + (high - low) * u; }

// floor(u * count) for u in [0, 1), kept below `count` whatever the draw.
int position(double u, int count) {
  const int value = static_cast<int>(u * count);
  return std::clamp(value, 0, count - 1);
}

std::string pair_text(std::array<double, 2> values) {
  char text[64];
  std::snprintf(text, sizeof(text), "(%g, %g)", values[0], values[1]);
  return text;
}

void check_image_size(int height, int width, const char* what) {
  if (height <= 0 || width <= 0) {
    throw ConfigError(std::string(what) + ": image size must be positive, got " +
                      std::to_string(height) + "x" + std::to_string(width));
  }
}

}  // namespace

void validate_random_crop_params(std::array<double, 2> scale, std::array<double, 2> ratio,
                                 const char* what) {
  // Written so that NaN fails every test.
  const bool scale_ok = std::isfinite(scale[0]) && std::isfinite(scale[1]) && scale[0] >= 0 &&
                        scale[1] > 0 && scale[0] <= scale[1];
  if (!scale_ok) {
    throw ConfigError(std::string(what) +
                      ": scale must be (min, max) with 0 <= min <= max and max > 0, got " +
                      pair_text(scale));
  }
  const bool ratio_ok =
      std::isfinite(ratio[0]) && std::isfinite(ratio[1]) && ratio[0] > 0 && ratio[0] <= ratio[1];
  if (!ratio_ok) {
    throw ConfigError(std::string(what) + ": ratio must be (min, max) with 0 < min <= max, got " +
                      pair_text(ratio));
  }
}

CropWindow random_resized_crop(int height, int width, std::array<double, 2> scale,
                               std::array<double, 2> ratio,
                               const std::function<double(std::uint32_t)>& uniform) {
  constexpr const char* kWhat = "random_resized_crop";
  check_image_size(height, width, kWhat);
  validate_random_crop_params(scale, ratio, kWhat);

  const double area = static_cast<double>(height) * width;
  const double log_ratio_low = std::log(ratio[0]);
  const double log_ratio_high = std::log(ratio[1]);
  for (int attempt = 0; attempt < kRandomCropTries; ++attempt) {
    const std::uint32_t first_draw = 4 * static_cast<std::uint32_t>(attempt);
    const double target_area = area * uniform_between(scale[0], scale[1], uniform(first_draw));
    const double aspect =
        std::exp(uniform_between(log_ratio_low, log_ratio_high, uniform(first_draw + 1)));
    // Compared as doubles before the conversion, so that a huge scale cannot overflow an int.
    const double w = round_half_even(std::sqrt(target_area * aspect));
    const double h = round_half_even(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      CropWindow window;
      window.height = static_cast<int>(h);
      window.width = static_cast<int>(w);
      window.top = position(uniform(first_draw + 2), height - window.height + 1);
      window.left = position(uniform(first_draw + 3), width - window.width + 1);
      return window;
    }
  }

  // Fallback: the largest centred window whose aspect ratio is clamped into the range.
  CropWindow window{0, 0, height, width};
  const double image_ratio = static_cast<double>(width) / static_cast<double>(height);
  if (image_ratio < ratio[0]) {
    window.height = static_cast<int>(round_half_even(width / ratio[0]));
  } else if (image_ratio > ratio[1]) {
    window.width = static_cast<int>(round_half_even(height * ratio[1]));
  }
  window.height = std::clamp(window.height, 1, height);
  window.width = std::clamp(window.width, 1, width);
  window.top = (height - window.height) / 2;
  window.left = (width - window.width) / 2;
  return window;
}

CropWindow center_crop(int height, int width, double ratio) {
  constexpr const char* kWhat = "center_crop";
  check_image_size(height, width, kWhat);
  if (!(ratio > 0 && ratio <= 1)) {
    char text[64];
    std::snprintf(text, sizeof(text), "%g", ratio);
    throw ConfigError(std::string(kWhat) + ": ratio must be within (0, 1], got " + text);
  }
  const int side = std::max(1, static_cast<int>(ratio * std::min(height, width)));
  return CropWindow{(height - side) / 2, (width - side) / 2, side, side};
}

}  // namespace ffcv
