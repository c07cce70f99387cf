// random_horizontal_flip: mirrors an image (H, W, C) left-right with probability `probability`,
// the draw keyed by (seed, epoch, sample). Any element type. Parameters: builtin_steps.cpp.
#include <cstring>

#include "ffcv/util/errors.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

class RandomHorizontalFlip final : public Operation {
 public:
  explicit RandomHorizontalFlip(double probability) : probability_(probability) {}
  std::string name() const override { return "random_horizontal_flip"; }
  PixelGeometry pixel_geometry() const override { return PixelGeometry::kMoves; }

  // x -> width - x when the sample is mirrored (the draw apply() makes), else in place.
  void map_geometry(const SampleContext& context, PlaneMaps& maps) const override {
    const auto width = static_cast<double>(state_.shape[1]);
    const auto height = static_cast<double>(state_.shape[0]);
    maps.push(mirrored(context) ? PlaneMap::mirror(width, height)
                                : PlaneMap::identity(width, height));
  }

  TensorState declare(const TensorState& input) override {
    if (input.shape.size() != 3) {
      throw ConfigError("random_horizontal_flip needs an (H, W, C) image, got " +
                        input.to_string());
    }
    state_ = input;
    return input;
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    const std::uint64_t height = state_.shape[0], width = state_.shape[1];
    const std::uint64_t pixel = state_.shape[2] * state_.dtype.itemsize;
    const std::uint64_t row = width * pixel;
    if (!mirrored(context)) {
      std::memcpy(output, input, height * row);
      return;
    }
    for (std::uint64_t y = 0; y < height; ++y) {
      const std::uint8_t* source = input + y * row;
      std::uint8_t* target = output + y * row;
      if (pixel == 3) {  // uint8 RGB, the common case: plain byte moves the compiler inlines
        for (std::uint64_t x = 0; x < width; ++x) {
          const std::uint8_t* from = source + (width - 1 - x) * 3;
          target[3 * x] = from[0];
          target[3 * x + 1] = from[1];
          target[3 * x + 2] = from[2];
        }
        continue;
      }
      for (std::uint64_t x = 0; x < width; ++x) {
        std::memcpy(target + x * pixel, source + (width - 1 - x) * pixel, pixel);
      }
    }
  }

 private:
  // Whether the sample is mirrored: its step's first draw.
  bool mirrored(const SampleContext& context) const { return context.uniform(0) < probability_; }

  double probability_;
  TensorState state_;
};

}  // namespace

std::shared_ptr<Operation> make_random_horizontal_flip(const OpParams& params) {
  return std::make_shared<RandomHorizontalFlip>(params.require_double("probability"));
}

}  // namespace ffcv
