// DeviceOperation: a pipeline step that runs on whole batches as tensors, after the loader's
// per-sample CPU stage: FFCV's ToDevice, ToTorchImage and the GPU NormalizeImage.
//
// A pipeline's CPU steps (ffcv/steps/operation.hpp) write each sample into its slot of a host
// batch; its device steps then take the batch as one tensor [N, ...]. With CUDA they are enqueued
// on the transfer stream right after (or as) the host-to-device copy, so they overlap the training
// step of the previous batch (ffcv/torch/device_transfer.hpp). Every device step also runs on CPU
// tensors, and every one that has a CPU twin in the loader core gives the same values.
//
// Like a CPU step, a device step declares its per-sample output state (no batch dimension)
// before the epoch, so a misconfigured stage fails when it is built, not at the first batch.
#pragma once

#include <torch/types.h>

#include <string>

#include "ffcv/steps/tensor_state.hpp"

namespace ffcv::torch_adapter {

class DeviceOperation {
 public:
  virtual ~DeviceOperation() = default;
  virtual std::string name() const = 0;
  // The per-sample output state for the per-sample `input` state. Throws ConfigError.
  virtual TensorState declare(const TensorState& input) = 0;
  // Transforms a batch [N, ...input state] on its device. On CUDA the work is enqueued on the
  // current stream; the host never waits for it.
  virtual at::Tensor apply(const at::Tensor& batch) const = 0;
  // Whether apply() spends host time per batch that is worth taking off the training thread
  // (decode_crops parses every JPEG for nvJPEG): DeviceTransfer then prepares batches on a thread
  // of its own.
  virtual bool works_on_host() const { return false; }
};

}  // namespace ffcv::torch_adapter
