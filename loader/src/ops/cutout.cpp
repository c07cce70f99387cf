// cutout: fills one `size` x `size` square of an (H, W, C) uint8 image with `fill` (one value
// per channel, default 0), always applied, the square always fully inside the image (FFCV's
// Cutout): top ~ U{0..H-size}, left ~ U{0..W-size}, drawn from (seed, epoch, sample).
#include <cstring>

#include "image_geometry.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

class Cutout final : public Operation {
 public:
  Cutout(std::int64_t size, std::vector<double> fill) : size_(size), fill_(std::move(fill)) {}
  std::string name() const override { return "cutout"; }
  PixelGeometry pixel_geometry() const override { return PixelGeometry::kKeeps; }

  TensorState declare(const TensorState& input) override {
    require_u8_image(input, "cutout");
    if (static_cast<std::uint64_t>(size_) > input.shape[0] ||
        static_cast<std::uint64_t>(size_) > input.shape[1]) {
      throw ConfigError("cutout: size " + std::to_string(size_) + " exceeds the image " +
                        input.to_string());
    }
    fill_ = resolve_fill(fill_, input.shape[2], "cutout");
    state_ = input;
    return input;
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    const std::uint64_t height = state_.shape[0], width = state_.shape[1];
    const std::uint64_t channels = state_.shape[2], size = static_cast<std::uint64_t>(size_);
    std::memcpy(output, input, state_.byte_size());
    const std::uint64_t top = uniform_index(context.uniform(0), height - size + 1);
    const std::uint64_t left = uniform_index(context.uniform(1), width - size + 1);
    for (std::uint64_t y = top; y < top + size; ++y) {
      std::uint8_t* row = output + (y * width + left) * channels;
      for (std::uint64_t x = 0; x < size; ++x) {
        for (std::uint64_t c = 0; c < channels; ++c) {
          row[x * channels + c] = static_cast<std::uint8_t>(fill_[c]);
        }
      }
    }
  }

 private:
  std::int64_t size_;
  std::vector<double> fill_;
  TensorState state_;
};

}  // namespace

std::shared_ptr<Operation> make_cutout(const OpParams& params) {
  return std::make_shared<Cutout>(params.require_int("size"), params.get_list("fill", {}));
}

}  // namespace ffcv
