// poison: blends a fixed pattern into the images of chosen samples (FFCV's Poison), for data-
// poisoning and backdoor studies.
//
// For a sample whose dataset index is in `indices`:
//   out = trunc(clip(img * (1 - alpha) + mask * alpha, clamp[0], clamp[1]))
// per pixel and channel; other samples pass unchanged. `mask` is an (H, W, C) image given as its
// H*W*C values in row-major order; `alpha` is one number for every pixel or H*W numbers, one per
// pixel (FFCV takes only the (H, W) array). The image size is the input state's, so poison
// follows a decoder with a fixed output size.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ffcv/util/errors.hpp"
#include "index_set.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

class Poison final : public Operation {
 public:
  Poison(std::vector<double> mask, std::vector<double> alpha, const std::vector<double>& indices,
         std::vector<double> clamp)
      : mask_(std::move(mask)),
        alpha_(std::move(alpha)),
        indices_(indices, "poison"),
        clamp_(std::move(clamp)) {
    // clamp's and alpha's bounds are declared in builtin_steps.cpp.
    if (alpha_.empty()) throw ConfigError("poison: alpha must have 1 or H*W values");
  }
  std::string name() const override { return "poison"; }
  PixelGeometry pixel_geometry() const override { return PixelGeometry::kKeeps; }

  TensorState declare(const TensorState& input) override {
    if (input.dtype.kind != 'u' || input.dtype.itemsize != 1 || input.shape.size() != 3) {
      throw ConfigError("poison needs uint8 (H, W, C) images, got " + input.to_string());
    }
    pixels_ = input.shape[0] * input.shape[1];
    channels_ = input.shape[2];
    if (mask_.size() != pixels_ * channels_) {
      throw ConfigError("poison: mask has " + std::to_string(mask_.size()) + " values, the " +
                        input.to_string() +
                        " images need H*W*C = " + std::to_string(pixels_ * channels_));
    }
    if (alpha_.size() != 1 && alpha_.size() != pixels_) {
      throw ConfigError("poison: alpha has " + std::to_string(alpha_.size()) +
                        " values; give 1 or H*W = " + std::to_string(pixels_));
    }
    return input;
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    const std::uint64_t bytes = pixels_ * channels_;
    if (!indices_.contains(context.index)) {
      std::memcpy(output, input, bytes);
      return;
    }
    for (std::uint64_t p = 0; p < pixels_; ++p) {
      const double alpha = alpha_.size() == 1 ? alpha_[0] : alpha_[p];
      for (std::uint64_t c = 0; c < channels_; ++c) {
        const std::uint64_t k = p * channels_ + c;
        const double blended = input[k] * (1.0 - alpha) + mask_[k] * alpha;
        output[k] = static_cast<std::uint8_t>(std::clamp(blended, clamp_[0], clamp_[1]));
      }
    }
  }

 private:
  std::vector<double> mask_, alpha_;
  IndexSet indices_;
  std::vector<double> clamp_;
  std::uint64_t pixels_ = 0, channels_ = 0;
};

}  // namespace

std::shared_ptr<Operation> make_poison(const OpParams& params) {
  std::vector<double> alpha = params.is_list("alpha")
                                  ? params.require_list("alpha")
                                  : std::vector<double>{params.require_double("alpha")};
  return std::make_shared<Poison>(params.require_list("mask"), std::move(alpha),
                                  params.require_list("indices"), params.require_list("clamp"));
}

}  // namespace ffcv
