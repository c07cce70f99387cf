// ResNet-18 and ResNet-50 in torchvision's layout (v1.5: the stride of a Bottleneck sits on its
// 3x3 convolution), the models of FFCV's ImageNet recipes.
//
// Module and parameter names are exactly torchvision's (conv1, bn1, layer1..layer4 with blocks
// "0", "1", ..., each with conv1/bn1/conv2/bn2[/conv3/bn3] and downsample.0 (conv) /
// downsample.1 (BatchNorm), fc), so named_parameters() and named_buffers() give the keys of
// torchvision's state_dict. That keeps checkpoints comparable with PyTorch and makes FFCV's
// weight-decay rule, which selects parameters by a substring of their name (param_groups.hpp),
// pick the same tensors.
//
// Initialisation follows torchvision: convolutions kaiming-normal (fan_out, ReLU gain),
// BatchNorm weight 1 and bias 0, the classifier as nn.Linear's default; the last BatchNorm of a
// block is not zero-initialised. The blocks call their convolutions through replaceable slots,
// so apply_blurpool (blurpool.hpp) can wrap them after construction as FFCV does.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <string>

#include "ffcv/train/blurpool.hpp"

namespace ffcv::train {

struct ResNetOptions {
  // "resnet18" (BasicBlock, [2, 2, 2, 2]) or "resnet50" (Bottleneck, [3, 4, 6, 3]).
  std::string arch = "resnet18";
  // Scales the planes of the stem and of the four stages (64, 128, 256, 512): each becomes
  // round(planes * width), at least 1. Width 1 gives torchvision's exact shapes.
  double width = 1.0;
  // "imagenet": 7x7/2 conv + BN + ReLU + 3x3/2 max-pool (224 px images).
  // "small": 3x3/1 conv + BN + ReLU and no max-pool, for 28-64 px images.
  // "small_strided": 3x3/2 conv + BN + ReLU and no max-pool: half of "small"'s resolution in
  // the stages, a quarter of its cost, for 28-32 px images on a CPU budget.
  std::string stem = "imagenet";
  int num_classes = 1000;
};

class ResNetImpl : public torch::nn::Module, public ConvSlots {
 public:
  // Throws ffcv::ConfigError for an unknown arch or stem (naming the allowed values), a width
  // that is not positive or a num_classes below 1.
  explicit ResNetImpl(const ResNetOptions& options);

  // Logits [N, num_classes] of images [N, 3, H, W] (any memory format).
  torch::Tensor forward(const torch::Tensor& x);

  void replace_conv(const std::string& name, torch::nn::AnyModule replacement) override;

  const ResNetOptions& options() const { return options_; }

 private:
  ResNetOptions options_;
  torch::nn::AnyModule conv1_;
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::array<torch::nn::Sequential, 4> layers_{nullptr, nullptr, nullptr, nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

// The number of scalar parameters of `module` and its descendants (buffers not counted).
std::int64_t parameter_count(const torch::nn::Module& module);

}  // namespace ffcv::train
