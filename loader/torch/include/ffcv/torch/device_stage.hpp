// DeviceStage: the device steps of one loader output, checked once and applied per batch.
//
// Built from the loader's per-sample output state and the steps' texts (NAME[:key=value,...],
// as for CPU steps), e.g. {"to_device", "to_torch_image", "normalize:mean=[...],std=[...],
// dtype=float16"}. Building declares every step, so a step that does not fit its input fails
// here, naming the step, the output and the state it got.
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "ffcv/steps/tensor_state.hpp"
#include "ffcv/torch/device_operation.hpp"

namespace ffcv::torch_adapter {

class DeviceStage {
 public:
  DeviceStage() = default;  // no steps: the batch passes through unchanged
  // `output` names the loader output (for errors); `input` is its per-sample state.
  DeviceStage(const std::string& output, const TensorState& input,
              const std::vector<std::string>& steps);
  DeviceStage(const std::string& output, const TensorState& input,
              std::vector<std::shared_ptr<DeviceOperation>> steps);

  // Runs every step in order on `batch` [N, ...input state].
  at::Tensor apply(at::Tensor batch) const;

  const TensorState& output_state() const { return output_; }
  bool empty() const { return steps_.empty(); }
  // Whether the steps take host batches to the GPU (to_device, decode_crops).
  bool moves_to_device() const { return moves_to_device_; }
  // Whether a step works on the host per batch (DeviceOperation::works_on_host).
  bool works_on_host() const;

 private:
  std::vector<std::shared_ptr<DeviceOperation>> steps_;
  TensorState output_;
  bool moves_to_device_ = false;
};

}  // namespace ffcv::torch_adapter
