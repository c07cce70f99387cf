#include "ffcv/train/resnet.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "ffcv/util/errors.hpp"

namespace ffcv::train {
namespace {

torch::nn::Conv2d make_conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                            std::int64_t stride) {
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
  torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
  return conv;
}

// LibTorch's BatchNorm2d already starts with weight 1 and bias 0, as torchvision sets them.
torch::nn::BatchNorm2d make_bn(std::int64_t channels) { return torch::nn::BatchNorm2d(channels); }

torch::nn::AnyModule register_conv(torch::nn::Module& owner, const std::string& name,
                                   torch::nn::Conv2d conv) {
  return torch::nn::AnyModule(owner.register_module(name, std::move(conv)));
}

// Replaces the conv registered as `name` and the slot forward() calls it through; `slots` lists
// the owner's (name, slot) pairs.
void replace_named_conv(torch::nn::Module& owner, const std::string& name,
                        std::initializer_list<std::pair<const char*, torch::nn::AnyModule*>> slots,
                        torch::nn::AnyModule replacement) {
  for (const auto& [slot_name, slot] : slots) {
    if (name != slot_name) continue;
    owner.replace_module(name, replacement.ptr());
    *slot = std::move(replacement);
    return;
  }
  throw ConfigError("replace_conv: " + owner.name() + " calls no convolution named '" + name + "'");
}

// torchvision's downsample path: a 1x1 convolution ("0") and a BatchNorm ("1").
class DownsampleImpl : public torch::nn::Module, public ConvSlots {
 public:
  DownsampleImpl(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv_(register_conv(*this, "0", make_conv(in, out, 1, stride))),
        bn_(register_module("1", make_bn(out))) {}

  torch::Tensor forward(const torch::Tensor& x) { return bn_(conv_.forward(x)); }

  void replace_conv(const std::string& name, torch::nn::AnyModule replacement) override {
    replace_named_conv(*this, name, {{"0", &conv_}}, std::move(replacement));
  }

 private:
  torch::nn::AnyModule conv_;
  torch::nn::BatchNorm2d bn_;
};
TORCH_MODULE(Downsample);

class BasicBlockImpl : public torch::nn::Module, public ConvSlots {
 public:
  static constexpr std::int64_t kExpansion = 1;

  BasicBlockImpl(std::int64_t in, std::int64_t planes, std::int64_t stride)
      : conv1_(register_conv(*this, "conv1", make_conv(in, planes, 3, stride))),
        bn1_(register_module("bn1", make_bn(planes))),
        conv2_(register_conv(*this, "conv2", make_conv(planes, planes, 3, 1))),
        bn2_(register_module("bn2", make_bn(planes))) {
    if (stride != 1 || in != planes * kExpansion) {
      downsample_ = register_module("downsample", Downsample(in, planes * kExpansion, stride));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto out = bn1_(conv1_.forward(x)).relu_();
    out = bn2_(conv2_.forward(out));
    out += downsample_.is_empty() ? x : downsample_(x);
    return out.relu_();
  }

  void replace_conv(const std::string& name, torch::nn::AnyModule replacement) override {
    replace_named_conv(*this, name, {{"conv1", &conv1_}, {"conv2", &conv2_}},
                       std::move(replacement));
  }

 private:
  torch::nn::AnyModule conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::AnyModule conv2_;
  torch::nn::BatchNorm2d bn2_;
  Downsample downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

// v1.5 Bottleneck: the stride sits on the 3x3 conv2, not on the first 1x1.
class BottleneckImpl : public torch::nn::Module, public ConvSlots {
 public:
  static constexpr std::int64_t kExpansion = 4;

  BottleneckImpl(std::int64_t in, std::int64_t planes, std::int64_t stride)
      : conv1_(register_conv(*this, "conv1", make_conv(in, planes, 1, 1))),
        bn1_(register_module("bn1", make_bn(planes))),
        conv2_(register_conv(*this, "conv2", make_conv(planes, planes, 3, stride))),
        bn2_(register_module("bn2", make_bn(planes))),
        conv3_(register_conv(*this, "conv3", make_conv(planes, planes * kExpansion, 1, 1))),
        bn3_(register_module("bn3", make_bn(planes * kExpansion))) {
    if (stride != 1 || in != planes * kExpansion) {
      downsample_ = register_module("downsample", Downsample(in, planes * kExpansion, stride));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto out = bn1_(conv1_.forward(x)).relu_();
    out = bn2_(conv2_.forward(out)).relu_();
    out = bn3_(conv3_.forward(out));
    out += downsample_.is_empty() ? x : downsample_(x);
    return out.relu_();
  }

  void replace_conv(const std::string& name, torch::nn::AnyModule replacement) override {
    replace_named_conv(*this, name, {{"conv1", &conv1_}, {"conv2", &conv2_}, {"conv3", &conv3_}},
                       std::move(replacement));
  }

 private:
  torch::nn::AnyModule conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::AnyModule conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::AnyModule conv3_;
  torch::nn::BatchNorm2d bn3_;
  Downsample downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

void check_options(const ResNetOptions& options) {
  if (options.arch != "resnet18" && options.arch != "resnet50") {
    throw ConfigError("unknown model arch '" + options.arch + "' (allowed: resnet18, resnet50)");
  }
  if (options.stem != "imagenet" && options.stem != "small" && options.stem != "small_strided") {
    throw ConfigError("unknown model stem '" + options.stem +
                      "' (allowed: imagenet, small, small_strided)");
  }
  if (!(options.width > 0.0) || !std::isfinite(options.width)) {
    throw ConfigError("model width must be a positive number, got " +
                      std::to_string(options.width));
  }
  if (options.num_classes < 1) {
    throw ConfigError("model num_classes must be at least 1, got " +
                      std::to_string(options.num_classes));
  }
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  check_options(options_);
  const bool bottleneck = options_.arch == "resnet50";
  const std::array<int, 4> depths =
      bottleneck ? std::array<int, 4>{3, 4, 6, 3} : std::array<int, 4>{2, 2, 2, 2};
  const std::int64_t expansion =
      bottleneck ? BottleneckImpl::kExpansion : BasicBlockImpl::kExpansion;
  const auto scaled = [&](std::int64_t planes) {
    return std::max<std::int64_t>(1, std::llround(static_cast<double>(planes) * options_.width));
  };

  const std::int64_t stem_channels = scaled(64);
  const bool imagenet_stem = options_.stem == "imagenet";
  const std::int64_t stem_stride = options_.stem == "small" ? 1 : 2;
  conv1_ = register_conv(*this, "conv1",
                         imagenet_stem ? make_conv(3, stem_channels, 7, 2)
                                       : make_conv(3, stem_channels, 3, stem_stride));
  bn1_ = register_module("bn1", make_bn(stem_channels));

  std::int64_t in = stem_channels;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t planes = scaled(std::int64_t{64} << stage);
    const std::int64_t stride = stage == 0 ? 1 : 2;
    torch::nn::Sequential layer;
    for (int block = 0; block < depths[stage]; ++block) {
      const std::int64_t block_stride = block == 0 ? stride : 1;
      if (bottleneck) {
        layer->push_back(Bottleneck(in, planes, block_stride));
      } else {
        layer->push_back(BasicBlock(in, planes, block_stride));
      }
      in = planes * expansion;
    }
    layers_[stage] = register_module("layer" + std::to_string(stage + 1), layer);
  }
  fc_ = register_module("fc", torch::nn::Linear(in, options_.num_classes));
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  auto out = bn1_(conv1_.forward(x)).relu_();
  if (options_.stem == "imagenet") {
    out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  }
  for (auto& layer : layers_) out = layer->forward(out);
  out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
  return fc_(out);
}

void ResNetImpl::replace_conv(const std::string& name, torch::nn::AnyModule replacement) {
  replace_named_conv(*this, name, {{"conv1", &conv1_}}, std::move(replacement));
}

std::int64_t parameter_count(const torch::nn::Module& module) {
  std::int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace ffcv::train
