// BlurPool for strided convolutions, as FFCV's ImageNet recipe uses it (anti-aliased
// downsampling, Zhang 2019).
//
// A strided convolution samples its input sparsely and so aliases high frequencies. FFCV's
// `BlurPoolConv2d` first low-passes the input with a fixed depthwise 3x3 binomial filter
// ([1,2,1]^T [1,2,1] / 16, stride 1, zero padding 1, one filter per input channel) and then runs
// the original, unchanged convolution. It adds no trainable parameter; in FFCV's runs it raised
// top-1 accuracy by 0.4-1.4 points for a small cost in time.
//
// The wrapper keeps FFCV's PyTorch names: the wrapped convolution is the child `conv` and the
// filter is the buffer `blur_filter` of shape (C_in, 1, 3, 3), so a wrapped model's state_dict
// keys (`layer2.0.conv1.conv.weight`, `layer2.0.conv1.blur_filter`) match a PyTorch checkpoint
// of the same model.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <string>

namespace ffcv::train {

// A strided convolution preceded by a fixed depthwise blur.
class BlurPoolConv2dImpl : public torch::nn::Module {
 public:
  // Wraps `conv` (kept as it is, parameters included). The filter takes the dtype and device of
  // the convolution's weight.
  explicit BlurPoolConv2dImpl(torch::nn::Conv2d conv);

  // conv(blur(x)); x is [N, C_in, H, W] in any memory format.
  torch::Tensor forward(const torch::Tensor& x);

  const torch::nn::Conv2d& conv() const { return conv_; }
  const torch::Tensor& blur_filter() const { return blur_filter_; }

 private:
  torch::nn::Conv2d conv_;
  torch::Tensor blur_filter_;
};
TORCH_MODULE(BlurPoolConv2d);

// Implemented by modules whose forward calls a child convolution that apply_blurpool may
// replace.
//
// LibTorch modules call their children through typed members, so registering a new child under
// an old name (Module::replace_module) would leave forward calling the old object. A module that
// holds its convolutions in replaceable slots (torch::nn::AnyModule) implements this interface;
// apply_blurpool refuses to replace a convolution whose parent does not.
class ConvSlots {
 public:
  virtual ~ConvSlots() = default;

  // Registers `replacement` as the child `name` (which must be a convolution this module calls
  // in forward) and makes forward call it from now on.
  virtual void replace_conv(const std::string& name, torch::nn::AnyModule replacement) = 0;
};

// True for the convolutions FFCV blurs: max(stride) > 1 and in_channels >= 16.
bool should_blur(const torch::nn::Conv2dImpl& conv);

// Walks `model` recursively and wraps every Conv2d for which should_blur holds in a
// BlurPoolConv2d, in place; returns how many were wrapped.
//
// Apply it right after building the model, before converting its memory format or moving it to
// a device, and before creating the optimizer (FFCV's order). Convolutions already wrapped are
// left alone, so a second call returns 0 (FFCV's Python version would wrap them again).
// On torchvision's ResNets this wraps 6 convolutions: the first block of layer2-4 (its strided
// 3x3 conv: conv1 in ResNet-18, conv2 in ResNet-50) and its downsample.0. The in_channels >= 16
// rule applies literally with width multipliers, so very narrow nets get fewer wrappers (at
// width 1/8 of ResNet-18, layer2's convs have 8 inputs and stay unblurred). A stem conv on 3
// input channels is never wrapped.
// Throws ffcv::ConfigError when a convolution to wrap sits in a parent that is not ConvSlots
// (for example a torch::nn::Sequential, which would keep calling the old module).
int apply_blurpool(torch::nn::Module& model);

}  // namespace ffcv::train
