#include "ffcv/train/batch_input.hpp"

#include <torch/torch.h>

#include "ffcv/decoders.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::train {
namespace {

using torch_adapter::DeviceOperation;
using torch_adapter::DeviceOpRegistry;

std::shared_ptr<DeviceOperation> to_device(const at::Device& device) {
  return DeviceOpRegistry::global().make_operation(
      "to_device", OpParams({{"device", std::int64_t{device.index()}}}));
}

}  // namespace

InputNormalizer::InputNormalizer(std::array<double, 3> mean, std::array<double, 3> std,
                                 at::Device device, at::ScalarType dtype, bool channels_last,
                                 std::string interpolation)
    : device_(device), dtype_(dtype), interpolation_(std::move(interpolation)) {
  const DeviceOpRegistry& registry = DeviceOpRegistry::global();
  if (device_.is_cuda()) {
    const std::shared_ptr<DeviceOperation> copy = to_device(device_);
    image_steps_.push_back(copy);
    label_steps_.push_back(copy);
    copy_steps_.push_back(copy);
  }
  image_steps_.push_back(registry.make_operation(
      "normalize",
      OpParams({{"mean", std::vector<double>(mean.begin(), mean.end())},
                {"std", std::vector<double>(std.begin(), std.end())},
                {"dtype", std::string(dtype_ == at::kHalf ? "float16" : "float32")}})));
  // After normalize, which reads channel-innermost memory: a planar (NCHW) copy is of the floats.
  image_steps_.push_back(
      registry.make_operation("to_torch_image", OpParams({{"channels_last", channels_last}})));
}

std::vector<torch_adapter::DeviceStage> InputNormalizer::stages(const Loader& loader) const {
  std::vector<torch_adapter::DeviceStage> stages;
  for (std::size_t i = 0; i < loader.outputs().size(); ++i) {
    const auto& [name, state] = loader.outputs()[i];
    if (name != kImageOutput) {
      stages.emplace_back(name, state, label_steps_);
    } else if (state.shape.size() == 1) {
      stages.emplace_back(name, state, gpu_decode_steps(loader.pipelines()[i]));
    } else {
      stages.emplace_back(name, state, image_steps_);
    }
  }
  return stages;
}

InputNormalizer::Steps InputNormalizer::gpu_decode_steps(const PipelineSpec& pipeline) const {
  const auto* crop = dynamic_cast<const ResizableDecoder*>(pipeline.decoder.get());
  if (crop == nullptr || !device_.is_cuda()) {
    throw ConfigError(
        "the image output holds records for decoding on the GPU, but its decoder "
        "is not an encoded crop or the training device is not CUDA");
  }
  // decode_crops stands in for to_device: it takes the host records, returns device pixels.
  Steps steps{DeviceOpRegistry::global().make_operation(
      "decode_crops", OpParams({{"height", std::int64_t{crop->output_height()}},
                                {"width", std::int64_t{crop->output_width()}},
                                {"device", std::int64_t{device_.index()}},
                                {"interpolation", interpolation_}}))};
  const Steps after = steps_after_copy();
  steps.insert(steps.end(), after.begin(), after.end());
  return steps;
}

InputNormalizer::Steps InputNormalizer::steps_after_copy() const {
  return Steps(image_steps_.begin() + static_cast<std::ptrdiff_t>(copy_steps_.size()),
               image_steps_.end());
}

std::vector<torch_adapter::DeviceStage> InputNormalizer::view_stages(const Loader& loader) const {
  std::vector<torch_adapter::DeviceStage> stages;
  for (const auto& [name, state] : loader.outputs()) {
    stages.emplace_back(name, state, name == kImageOutput ? copy_steps_ : label_steps_);
  }
  return stages;
}

ModelInput InputNormalizer::view_input(const at::Tensor& views, int v,
                                       const at::Tensor& labels) const {
  TORCH_CHECK(views.dim() == 5 && views.size(4) == 3 && views.scalar_type() == torch::kUInt8,
              "expected uint8 views [N, V, H, W, 3], got ", views.sizes(), " ",
              views.scalar_type());
  const at::Tensor one = views.select(1, v).contiguous();
  const TensorState state{
      DType::parse("|u1"),
      {static_cast<std::uint64_t>(one.size(1)), static_cast<std::uint64_t>(one.size(2)), 3},
      one.is_cuda() ? Device::kCuda : Device::kCpu};
  // The normalize and layout steps: the copy (the first step on CUDA) is done.
  const torch_adapter::DeviceStage stage(kImageOutput, state, steps_after_copy());
  return (*this)(stage.apply(one), labels);
}

ModelInput InputNormalizer::operator()(const at::Tensor& images, const at::Tensor& labels) const {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == 3 && images.is_floating_point(),
              "expected normalised images [N, 3, H, W], got ", images.sizes(), " ",
              images.scalar_type());
  ModelInput input;
  // Blocking when a copy is needed: a host input may view a batch slot the caller releases next.
  input.images = images.to(device_, dtype_);
  const at::Tensor on_device = labels.to(device_);
  if (on_device.dim() == 2 && on_device.size(1) == 3 && on_device.is_floating_point()) {
    input.labels = on_device.select(1, 0).to(torch::kInt64);
    input.partner_labels = on_device.select(1, 1).to(torch::kInt64);
    input.mix_weights = on_device.select(1, 2).to(torch::kFloat32);
  } else {
    input.labels = on_device.reshape({-1}).to(torch::kInt64);
  }
  return input;
}

ModelInput InputNormalizer::from_loader(const at::Tensor& images, const at::Tensor& labels) const {
  TORCH_CHECK(images.dim() == 4 && images.size(3) == 3 && images.scalar_type() == torch::kUInt8,
              "expected uint8 images [N, H, W, 3], got ", images.sizes(), " ",
              images.scalar_type());
  const TensorState state{
      DType::parse("|u1"),
      {static_cast<std::uint64_t>(images.size(1)), static_cast<std::uint64_t>(images.size(2)), 3},
      Device::kCpu};
  const torch_adapter::DeviceStage stage(kImageOutput, state, image_steps_);
  return (*this)(stage.apply(images.is_cuda() ? images.cpu() : images), labels);
}

}  // namespace ffcv::train
