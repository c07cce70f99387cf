#include "ffcv/train/blurpool.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <memory>

#include "ffcv/util/errors.hpp"

namespace ffcv::train {

BlurPoolConv2dImpl::BlurPoolConv2dImpl(torch::nn::Conv2d conv) : conv_(std::move(conv)) {
  const std::int64_t channels = conv_->options.in_channels();
  const auto taps = torch::tensor({1.0, 2.0, 1.0}, torch::kDouble);
  const auto kernel = torch::outer(taps, taps) / 16.0;
  blur_filter_ = kernel.expand({channels, 1, 3, 3}).contiguous().to(conv_->weight.options());
  register_module("conv", conv_);
  register_buffer("blur_filter", blur_filter_);
}

torch::Tensor BlurPoolConv2dImpl::forward(const torch::Tensor& x) {
  const auto blurred = torch::conv2d(x, blur_filter_, /*bias=*/{}, /*stride=*/1, /*padding=*/1,
                                     /*dilation=*/1, /*groups=*/blur_filter_.size(0));
  return conv_->forward(blurred);
}

bool should_blur(const torch::nn::Conv2dImpl& conv) {
  const auto& stride = *conv.options.stride();
  const std::int64_t max_stride = *std::max_element(stride.begin(), stride.end());
  return max_stride > 1 && conv.options.in_channels() >= 16;
}

namespace {

int blur_children(torch::nn::Module& parent, const std::string& path) {
  int wrapped = 0;
  // named_children() returns a copy, so replacing children while iterating is safe.
  for (const auto& item : parent.named_children()) {
    const std::string& name = item.key();
    const std::shared_ptr<torch::nn::Module>& child = item.value();
    const std::string child_path = path.empty() ? name : path + "." + name;
    if (std::dynamic_pointer_cast<BlurPoolConv2dImpl>(child)) continue;
    const auto conv = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(child);
    if (conv && should_blur(*conv)) {
      auto* owner = dynamic_cast<ConvSlots*>(&parent);
      if (owner == nullptr) {
        throw ConfigError("apply_blurpool: cannot wrap '" + child_path + "': its parent module (" +
                          parent.name() + ") does not hold its convolutions in replaceable slots");
      }
      owner->replace_conv(name, torch::nn::AnyModule(BlurPoolConv2d(torch::nn::Conv2d(conv))));
      ++wrapped;
    } else {
      wrapped += blur_children(*child, child_path);
    }
  }
  return wrapped;
}

}  // namespace

int apply_blurpool(torch::nn::Module& model) { return blur_children(model, ""); }

}  // namespace ffcv::train
