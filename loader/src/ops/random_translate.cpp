// random_translate: shifts an (H, W, C) uint8 image by up to `padding` pixels in each direction,
// exposing `fill` (one value per channel, default 0), always applied (FFCV's RandomTranslate).
#include <utility>

#include "image_geometry.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

class RandomTranslate final : public Operation {
 public:
  RandomTranslate(std::int64_t padding, std::vector<double> fill)
      : padding_(padding), fill_(std::move(fill)) {}
  std::string name() const override { return "random_translate"; }

  TensorState declare(const TensorState& input) override {
    require_u8_image(input, "random_translate");
    fill_ = resolve_fill(fill_, input.shape[2], "random_translate");
    state_ = input;
    return input;
  }

  // FFCV pads by `padding` on every side and takes an H x W window at (dy, dx), each uniform
  // in [0, 2 * padding]; output pixel (y, x) is input (y + dy - padding, x + dx - padding), or
  // the fill colour outside the input.
  PixelGeometry pixel_geometry() const override { return PixelGeometry::kMoves; }

  // Input pixel (x, y) lands at (x - dx, y - dy) on a canvas of the same size.
  void map_geometry(const SampleContext& context, PlaneMaps& maps) const override {
    const auto [dy, dx] = shift(context);
    maps.push({1, static_cast<double>(-dx), 1, static_cast<double>(-dy),
               static_cast<double>(state_.shape[1]), static_cast<double>(state_.shape[0])});
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    const auto height = static_cast<std::int64_t>(state_.shape[0]);
    const auto width = static_cast<std::int64_t>(state_.shape[1]);
    const auto channels = static_cast<std::int64_t>(state_.shape[2]);
    const auto [dy, dx] = shift(context);
    for (std::int64_t y = 0; y < height; ++y) {
      std::uint8_t* out_row = output + y * width * channels;
      const std::int64_t sy = y + dy;
      for (std::int64_t x = 0; x < width; ++x) {
        const std::int64_t sx = x + dx;
        const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
        for (std::int64_t c = 0; c < channels; ++c) {
          out_row[x * channels + c] = inside ? input[(sy * width + sx) * channels + c]
                                             : static_cast<std::uint8_t>(fill_[c]);
        }
      }
    }
  }

 private:
  // The sample's window offset (dy, dx), each in [-padding, padding].
  std::pair<std::int64_t, std::int64_t> shift(const SampleContext& context) const {
    const auto span = static_cast<std::uint64_t>(2 * padding_ + 1);
    return {static_cast<std::int64_t>(uniform_index(context.uniform(0), span)) - padding_,
            static_cast<std::int64_t>(uniform_index(context.uniform(1), span)) - padding_};
  }

  std::int64_t padding_;
  std::vector<double> fill_;
  TensorState state_;
};

}  // namespace

std::shared_ptr<Operation> make_random_translate(const OpParams& params) {
  return std::make_shared<RandomTranslate>(params.require_int("padding"),
                                           params.get_list("fill", {}));
}

}  // namespace ffcv
