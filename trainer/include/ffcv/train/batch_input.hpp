// BatchInput: a loader batch (uint8 [N, H, W, 3] images, int64 [N, 1] labels) as the model's
// input, on the training device.
//
// The image tensor is permuted to [N, 3, H, W] without copying, which is exactly the
// channels_last layout, then converted to the compute dtype and normalised with the recipe's
// per-channel mean and std (pixel scale 0..255). On a GPU this runs after the host-to-device
// copy, so only uint8 bytes cross the bus (FFCV's ToTorchImage + NormalizeImage on the GPU).
#pragma once

#include <torch/types.h>

#include <array>

namespace ffcv::train {

struct ModelInput {
  at::Tensor images;  // [N, 3, H, W], normalised, `dtype`
  at::Tensor labels;  // [N], int64
  // With mixup: each sample's partner label and its own weight (float32 [N]); else undefined.
  at::Tensor partner_labels;
  at::Tensor mix_weights;
};

class InputNormalizer {
 public:
  InputNormalizer(std::array<double, 3> mean, std::array<double, 3> std, at::Device device,
                  at::ScalarType dtype, bool channels_last);

  // `images` uint8 [N, H, W, 3] and `labels` int64 [N, 1] or [N], or label_mixup's float32
  // [N, 3] rows (label, partner's label, weight), on any device.
  ModelInput operator()(const at::Tensor& images, const at::Tensor& labels) const;

 private:
  at::Device device_;
  at::ScalarType dtype_;
  bool channels_last_;
  at::Tensor mean_, inv_std_;  // [1, 3, 1, 1] float32 on `device`
};

}  // namespace ffcv::train
