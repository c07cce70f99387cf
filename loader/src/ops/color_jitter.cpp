// random_brightness, random_contrast, random_saturation: FFCV's colour jitter on (H, W, 3) uint8
// images. With probability `probability` a factor f ~ U(max(0, 1 - magnitude),
// 1 + magnitude) is drawn, and
//   brightness: v' = clip(f * v)
//   contrast:   v' = clip(f * v + (1 - f) * mean(gray))      gray = uint8(0.2989 R + 0.587 G +
//   0.114 B) saturation: v' = clip(f * v + (1 - f) * gray(pixel))
// each truncated back to uint8 as FFCV does.
#include <algorithm>
#include <cmath>

#include "image_geometry.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

enum class Jitter { kBrightness, kContrast, kSaturation };

class ColorJitter final : public Operation {
 public:
  ColorJitter(Jitter kind, double magnitude, double probability)
      : kind_(kind), magnitude_(magnitude), probability_(probability) {}
  PixelGeometry pixel_geometry() const override { return PixelGeometry::kKeeps; }
  std::string name() const override {
    switch (kind_) {
      case Jitter::kBrightness:
        return "random_brightness";
      case Jitter::kContrast:
        return "random_contrast";
      case Jitter::kSaturation:
        return "random_saturation";
    }
    return "?";
  }

  TensorState declare(const TensorState& input) override {
    require_u8_image(input, name());
    if (input.shape[2] != 3) throw ConfigError(name() + " needs 3 channels (RGB)");
    pixels_ = input.shape[0] * input.shape[1];
    return input;
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    if (context.uniform(0) >= probability_) {
      std::copy(input, input + pixels_ * 3, output);
      return;
    }
    const double low = std::max(0.0, 1.0 - magnitude_);
    const double factor = low + context.uniform(1) * (1.0 + magnitude_ - low);
    const auto clip = [](double v) {
      return static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));  // truncates, as FFCV
    };
    const auto gray = [](const std::uint8_t* p) {
      return static_cast<double>(
          static_cast<std::uint8_t>(0.2989 * p[0] + 0.587 * p[1] + 0.114 * p[2]));
    };
    if (kind_ == Jitter::kBrightness) {
      for (std::uint64_t i = 0; i < pixels_ * 3; ++i) output[i] = clip(factor * input[i]);
    } else if (kind_ == Jitter::kContrast) {
      double sum = 0;
      for (std::uint64_t p = 0; p < pixels_; ++p) sum += gray(input + 3 * p);
      const double offset = (1.0 - factor) * (sum / static_cast<double>(pixels_));
      for (std::uint64_t i = 0; i < pixels_ * 3; ++i) output[i] = clip(factor * input[i] + offset);
    } else {
      for (std::uint64_t p = 0; p < pixels_; ++p) {
        const double offset = (1.0 - factor) * gray(input + 3 * p);
        for (int c = 0; c < 3; ++c) output[3 * p + c] = clip(factor * input[3 * p + c] + offset);
      }
    }
  }

 private:
  Jitter kind_;
  double magnitude_, probability_;
  std::uint64_t pixels_ = 0;
};

std::shared_ptr<Operation> make(Jitter kind, const OpParams& params) {
  return std::make_shared<ColorJitter>(kind, params.require_double("magnitude"),
                                       params.require_double("probability"));
}

}  // namespace

std::shared_ptr<Operation> make_random_brightness(const OpParams& params) {
  return make(Jitter::kBrightness, params);
}
std::shared_ptr<Operation> make_random_contrast(const OpParams& params) {
  return make(Jitter::kContrast, params);
}
std::shared_ptr<Operation> make_random_saturation(const OpParams& params) {
  return make(Jitter::kSaturation, params);
}

}  // namespace ffcv
