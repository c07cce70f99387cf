// decode_crops in a build without CUDA or without nvJPEG: the step is listed, and building it
// says why it cannot run.
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/torch/gpu_image_decode.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::torch_adapter {

bool gpu_image_decode_built() { return false; }

GpuDecodeCounts gpu_decode_counts(const DeviceOperation&) { return {}; }

void register_gpu_image_steps(DeviceOpRegistry& registry) {
  registry.register_operation(
      "decode_crops",
      "host records of *_crop_encoded -> uint8 [N, H, W, 3] on CUDA (not in this build)",
      [](const OpParams&) -> std::shared_ptr<DeviceOperation> {
        throw ConfigError(
            "decode_crops: this build has no GPU image path (it needs FFCV_WITH_CUDA and nvJPEG's "
            "nvjpeg.h and library at configure time: the CUDA toolkit's, or the nvidia-nvjpeg "
            "wheel in the project's .venv)");
      });
}

}  // namespace ffcv::torch_adapter
