#include "ffcv/train/batch_input.hpp"

#include <torch/torch.h>

namespace ffcv::train {

InputNormalizer::InputNormalizer(std::array<double, 3> mean, std::array<double, 3> std,
                                 at::Device device, at::ScalarType dtype, bool channels_last)
    : device_(device), dtype_(dtype), channels_last_(channels_last) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32);
  mean_ = torch::tensor({mean[0], mean[1], mean[2]}, options).view({1, 3, 1, 1}).to(device);
  inv_std_ = torch::tensor({1.0 / std[0], 1.0 / std[1], 1.0 / std[2]}, options).view({1, 3, 1, 1});
  inv_std_ = inv_std_.to(device);
}

ModelInput InputNormalizer::operator()(const at::Tensor& images, const at::Tensor& labels) const {
  TORCH_CHECK(images.dim() == 4 && images.size(3) == 3 && images.scalar_type() == torch::kUInt8,
              "expected uint8 images [N, H, W, 3], got ", images.sizes(), " ",
              images.scalar_type());
  // [N, H, W, 3] -> [N, 3, H, W]: a view whose strides are the channels_last layout.
  at::Tensor x = images.to(device_, /*non_blocking=*/true).permute({0, 3, 1, 2});
  x = (x.to(torch::kFloat32) - mean_) * inv_std_;
  x = x.to(dtype_);
  x = channels_last_ ? x.contiguous(at::MemoryFormat::ChannelsLast) : x.contiguous();
  ModelInput input;
  input.images = x;
  const at::Tensor on_device = labels.to(device_, /*non_blocking=*/true);
  if (on_device.dim() == 2 && on_device.size(1) == 3 && on_device.is_floating_point()) {
    input.labels = on_device.select(1, 0).to(torch::kInt64);
    input.partner_labels = on_device.select(1, 1).to(torch::kInt64);
    input.mix_weights = on_device.select(1, 2).to(torch::kFloat32);
  } else {
    input.labels = on_device.reshape({-1}).to(torch::kInt64);
  }
  return input;
}

}  // namespace ffcv::train
