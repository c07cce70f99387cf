// BatchInput: how a loader batch (uint8 [N, H, W, 3] images, int64 [N, 1] labels) becomes the
// model's input on the training device.
//
// The work is split in two. The device stages (ffcv/torch/device_stage.hpp) run where the batch
// is copied: on CUDA, on the transfer stream, overlapped with the previous step, so only uint8
// bytes cross the bus (FFCV's ToDevice + ToTorchImage + NormalizeImage):
//   image: to_device, normalize (the recipe's mean and std, float16 when the compute type is
//          float16, else float32), to_torch_image (a channels_last view, or an NCHW copy)
//   label: to_device
// Then operator() finishes on the consumer: the compute dtype (bfloat16 has no lookup table),
// labels as int64 [N], and label_mixup's rows split into labels, partners and weights.
#pragma once

#include <torch/types.h>

#include <array>
#include <vector>

#include "ffcv/loader.hpp"
#include "ffcv/torch/device_stage.hpp"

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
  // `interpolation` is the resize filter of decode_crops on the GPU image path
  // (data.interpolation).
  InputNormalizer(std::array<double, 3> mean, std::array<double, 3> std, at::Device device,
                  at::ScalarType dtype, bool channels_last, std::string interpolation = "area");

  // One stage per output of `loader` (whose outputs are "image" and "label"), in its order. An
  // image output of encoded-crop records (TrainData::decodes_on_gpu) starts with decode_crops at
  // its decoder's current output size instead of to_device.
  std::vector<torch_adapter::DeviceStage> stages(const Loader& loader) const;

  // `images` and `labels` as the stages left them: [N, 3, H, W] normalised on the device, and
  // int64 [N, 1] or label_mixup's float32 [N, 3] rows (label, partner's label, weight).
  ModelInput operator()(const at::Tensor& images, const at::Tensor& labels) const;

  const at::Device& device() const { return device_; }

  // Several views of each image ([N, V, H, W, 3], TrainData with views): stages() would not fit
  // them, so view_stages() only move each output to the device (labels as stages() do), and
  // view_input() finishes view `v` of a batch that passed through them.
  std::vector<torch_adapter::DeviceStage> view_stages(const Loader& loader) const;
  ModelInput view_input(const at::Tensor& views, int v, const at::Tensor& labels) const;

  // Both steps at once, for a batch that did not pass through the stages (tests, tools).
  ModelInput from_loader(const at::Tensor& images, const at::Tensor& labels) const;

 private:
  using Steps = std::vector<std::shared_ptr<torch_adapter::DeviceOperation>>;

  Steps gpu_decode_steps(const PipelineSpec& pipeline) const;
  // The image steps after the copy to the device (normalize, layout).
  Steps steps_after_copy() const;

  at::Device device_;
  at::ScalarType dtype_;
  std::string interpolation_;
  // Built once and shared by every epoch's stages (normalize copies its table to the GPU once).
  Steps image_steps_, label_steps_;
  Steps copy_steps_;  // to_device alone (CUDA), or nothing
};

}  // namespace ffcv::train
