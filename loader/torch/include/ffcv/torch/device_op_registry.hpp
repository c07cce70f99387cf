// DeviceOpRegistry: the device steps by name, as recipes and pipelines list them.
//
// Built in:
//   to_device        copy the batch to the current CUDA device (FFCV's ToDevice)
//   to_torch_image   [N, H, W, C] -> [N, C, H, W], a view in the channels_last layout, or a
//                    contiguous NCHW copy with channels_last=false (FFCV's ToTorchImage)
//   normalize        uint8 -> float32/float16, (v - mean[c]) / std[c] (FFCV's NormalizeImage)
//   convert          cast to `dtype` (FFCV's Convert)
//   decode_crops     the GPU image path's decode, crop, resize and flip of the records that
//                    random_resized_crop_encoded / center_crop_encoded leave on the host
//                    (ffcv/torch/gpu_image_decode.hpp)
// The names match the CPU steps they mirror, so one pipeline text reads the same on either side.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ffcv/steps/named_steps.hpp"
#include "ffcv/steps/op_params.hpp"
#include "ffcv/torch/device_operation.hpp"

namespace ffcv::torch_adapter {

using DeviceOperationFactory = std::function<std::shared_ptr<DeviceOperation>(const OpParams&)>;

class DeviceOpRegistry {
 public:
  // The process-wide registry, holding the built-in steps.
  static DeviceOpRegistry& global();

  DeviceOpRegistry() = default;
  DeviceOpRegistry(const DeviceOpRegistry&) = delete;
  DeviceOpRegistry& operator=(const DeviceOpRegistry&) = delete;

  // Throws ConfigError when the name is taken.
  void register_operation(const std::string& name, std::string summary,
                          DeviceOperationFactory factory);
  bool has_operation(const std::string& name) const;

  // Builds a step; throws ConfigError for an unknown name (suggesting the closest) or for
  // parameters the step does not take.
  std::shared_ptr<DeviceOperation> make_operation(const std::string& name,
                                                  const OpParams& params) const;

  // (name, summary) of every step, sorted by name.
  std::vector<std::pair<std::string, std::string>> operations() const;

 private:
  mutable std::mutex mutex_;
  NamedSteps<DeviceOperationFactory> operations_;
};

}  // namespace ffcv::torch_adapter
