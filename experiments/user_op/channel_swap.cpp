// An example op library: `swap_channels` reorders the channels of an (H, W, C) image.
//
// `order` (default [2, 1, 0], RGB -> BGR) lists, for each output channel, the input channel it
// copies; it must be a permutation of 0..C-1. Any element type. Deterministic, so its output can
// be checked byte for byte; see README.md for building and loading it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ffcv/steps/op_library.hpp"
#include "ffcv/util/errors.hpp"

namespace {

class SwapChannels final : public ffcv::Operation {
 public:
  explicit SwapChannels(const std::vector<double>& order) {
    for (double channel : order) {
      if (channel < 0 || channel != static_cast<double>(static_cast<std::uint64_t>(channel))) {
        throw ffcv::ConfigError("swap_channels: order must list channel numbers 0, 1, ...");
      }
      order_.push_back(static_cast<std::uint64_t>(channel));
    }
    std::vector<std::uint64_t> sorted = order_;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint64_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] != i) {
        throw ffcv::ConfigError("swap_channels: order must be a permutation of 0.." +
                                std::to_string(order_.size() - 1));
      }
    }
  }

  std::string name() const override { return "swap_channels"; }

  ffcv::TensorState declare(const ffcv::TensorState& input) override {
    if (input.shape.size() != 3 || input.shape[2] != order_.size()) {
      throw ffcv::ConfigError("swap_channels with " + std::to_string(order_.size()) +
                              " channels needs an (H, W, " + std::to_string(order_.size()) +
                              ") image, got " + input.to_string());
    }
    pixels_ = input.shape[0] * input.shape[1];
    itemsize_ = input.dtype.itemsize;
    return input;
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const ffcv::SampleContext&) const override {
    const std::uint64_t channels = order_.size();
    const std::uint64_t pixel = channels * itemsize_;
    if (itemsize_ == 1) {  // uint8 images: plain byte moves
      for (std::uint64_t p = 0; p < pixels_; ++p) {
        for (std::uint64_t c = 0; c < channels; ++c) output[c] = input[order_[c]];
        input += channels;
        output += channels;
      }
      return;
    }
    for (std::uint64_t p = 0; p < pixels_; ++p) {
      const std::uint8_t* from = input + p * pixel;
      std::uint8_t* to = output + p * pixel;
      for (std::uint64_t c = 0; c < channels; ++c) {
        std::memcpy(to + c * itemsize_, from + order_[c] * itemsize_, itemsize_);
      }
    }
  }

 private:
  std::vector<std::uint64_t> order_;
  std::uint64_t pixels_ = 0, itemsize_ = 0;
};

}  // namespace

FFCV_OP_LIBRARY(registry) {
  registry.register_operation(
      "swap_channels", "reorder the channels of (H, W, C): output c = input `order`[c] ([2,1,0])",
      [](const ffcv::OpParams& params) {
        return std::make_shared<SwapChannels>(params.get_list("order", {2, 1, 0}));
      });
}
