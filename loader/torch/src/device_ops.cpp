// The built-in device steps (device_op_registry.hpp).
#include <torch/torch.h>

#include <map>
#include <mutex>

#include "channel_lookup.hpp"
#include "ffcv/normalize_table.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/util/errors.hpp"
#ifdef FFCV_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace ffcv::torch_adapter {
namespace {

class ToDevice final : public DeviceOperation {
 public:
  explicit ToDevice(std::int64_t device) : device_(device) {
#ifndef FFCV_WITH_CUDA
    throw ConfigError("to_device: this build has no CUDA (FFCV_WITH_CUDA is off)");
#endif
    if (!torch::cuda::is_available()) throw ConfigError("to_device: no CUDA device is visible");
    if (device_ >= static_cast<std::int64_t>(torch::cuda::device_count())) {
      throw ConfigError("to_device: device " + std::to_string(device_) + " does not exist (" +
                        std::to_string(torch::cuda::device_count()) + " visible)");
    }
  }
  std::string name() const override { return "to_device"; }
  TensorState declare(const TensorState& input) override {
    TensorState out = input;
    out.device = Device::kCuda;
    return out;
  }
  at::Tensor apply(const at::Tensor& batch) const override {
    // Without an index: the current device, which the transfer stream's guard sets.
    const at::Device target =
        device_ < 0 ? at::Device(at::kCUDA) : at::Device(at::kCUDA, static_cast<int>(device_));
    return batch.to(target, /*non_blocking=*/true);
  }

 private:
  std::int64_t device_;
};

class ToTorchImage final : public DeviceOperation {
 public:
  explicit ToTorchImage(bool channels_last) : channels_last_(channels_last) {}
  std::string name() const override { return "to_torch_image"; }
  TensorState declare(const TensorState& input) override {
    if (input.shape.size() != 3) {
      throw ConfigError("to_torch_image needs [H, W, C] images, got " + input.to_string());
    }
    TensorState out = input;
    out.shape = {input.shape[2], input.shape[0], input.shape[1]};
    return out;
  }
  at::Tensor apply(const at::Tensor& batch) const override {
    TORCH_CHECK(batch.dim() == 4, "to_torch_image: expected [N, H, W, C], got ", batch.sizes());
    // The permuted view of NHWC memory is exactly the channels_last layout: no copy.
    const at::Tensor nchw = batch.permute({0, 3, 1, 2});
    return channels_last_ ? nchw.contiguous(at::MemoryFormat::ChannelsLast) : nchw.contiguous();
  }

 private:
  bool channels_last_;
};

class DeviceConvert final : public DeviceOperation {
 public:
  explicit DeviceConvert(const std::string& dtype)
      : target_(DType::parse(dtype)), type_(scalar_type(target_)) {}
  std::string name() const override { return "convert"; }
  TensorState declare(const TensorState& input) override {
    TensorState out = input;
    out.dtype = target_;
    return out;
  }
  // Out of range, float-to-integer casts differ between devices (the CPU step wraps, CUDA
  // saturates); in range both truncate toward zero.
  at::Tensor apply(const at::Tensor& batch) const override { return batch.to(type_); }

 private:
  DType target_;
  at::ScalarType type_;
};

// uint8 -> float32/float16 through the same tables as the CPU `normalize`, for a batch stored
// channel-innermost: [N, ..., C] contiguous, or [N, C, H, W] in channels_last (to_torch_image's
// output). The output keeps the input's layout.
class DeviceNormalize final : public DeviceOperation {
 public:
  DeviceNormalize(const std::vector<double>& mean, const std::vector<double>& std_dev,
                  const std::string& dtype)
      : table_(make_normalize_table(mean, std_dev, "normalize")),
        dtype_(normalize_dtype(dtype, "normalize")) {}
  std::string name() const override { return "normalize"; }
  TensorState declare(const TensorState& input) override {
    const std::uint64_t channels = table_.channels;
    const bool last = !input.shape.empty() && input.shape.back() == channels;
    const bool first = input.shape.size() == 3 && input.shape[0] == channels;
    if (input.dtype.kind != 'u' || input.dtype.itemsize != 1 || !(last || first)) {
      throw ConfigError("normalize needs uint8 samples with " + std::to_string(channels) +
                        " channels ([..., C] or [C, H, W]), got " + input.to_string());
    }
    TensorState out = input;
    out.dtype = dtype_;
    return out;
  }

  at::Tensor apply(const at::Tensor& batch) const override {
    const auto channels = static_cast<std::int64_t>(table_.channels);
    TORCH_CHECK(batch.scalar_type() == at::kByte, "normalize: expected uint8, got ",
                batch.scalar_type());
    const bool innermost = (batch.is_contiguous() && batch.size(-1) == channels) ||
                           (batch.dim() == 4 && batch.size(1) == channels &&
                            batch.is_contiguous(at::MemoryFormat::ChannelsLast));
    TORCH_CHECK(innermost, "normalize: expected channels innermost in memory ([N, ..., ", channels,
                "] contiguous or [N, ", channels, ", H, W] channels_last), got sizes ",
                batch.sizes(), " strides ", batch.strides());
    // Same sizes and strides as the input (dense), so the lookup runs over flat memory.
    at::Tensor out = at::empty_like(batch, batch.options().dtype(scalar_type(dtype_)));
    const int entry_bytes = static_cast<int>(dtype_.itemsize);
    const auto count = static_cast<std::uint64_t>(batch.numel());
    const auto* in = batch.data_ptr<std::uint8_t>();
    if (batch.is_cuda()) {
#ifdef FFCV_WITH_CUDA
      // A kernel launches on the current device: make it the batch's.
      const c10::cuda::CUDAGuard device_guard(batch.device());
      const at::Tensor& table = device_table(batch.device());
      detail::channel_lookup_cuda(in, out.data_ptr(), table.data_ptr(), count,
                                  static_cast<int>(channels), entry_bytes,
                                  c10::cuda::getCurrentCUDAStream(batch.device().index()).stream());
      return out;
#else
      throw ConfigError("normalize: this build has no CUDA kernels (FFCV_WITH_CUDA is off)");
#endif
    }
    // Chunks of whole pixels, as the table lookup expects.
    const auto pixels = static_cast<std::int64_t>(count / channels);
    at::parallel_for(0, pixels, 16384, [&](std::int64_t begin, std::int64_t end) {
      const std::int64_t first = begin * channels, n = (end - begin) * channels;
      if (entry_bytes == 4) {
        apply_normalize_table(table_, in + first, out.data_ptr<float>() + first,
                              static_cast<std::uint64_t>(n));
      } else {
        apply_normalize_table(table_, in + first,
                              reinterpret_cast<std::uint16_t*>(out.data_ptr<at::Half>()) + first,
                              static_cast<std::uint64_t>(n));
      }
    });
    return out;
  }

 private:
  // The table on `device`, copied there once.
  const at::Tensor& device_table(const at::Device& device) const {
    std::lock_guard lock(mutex_);
    auto it = device_tables_.find(device.index());
    if (it == device_tables_.end()) {
      // A synchronous copy from the host tables (pageable memory), once per device.
      const auto entries = static_cast<std::int64_t>(table_.f32.size());
      void* host = dtype_.itemsize == 4 ? static_cast<void*>(const_cast<float*>(table_.f32.data()))
                                        : const_cast<std::uint16_t*>(table_.f16.data());
      const at::Tensor view =
          torch::from_blob(host, {entries}, dtype_.itemsize == 4 ? torch::kFloat32 : torch::kInt16);
      it = device_tables_.emplace(device.index(), view.to(device)).first;
    }
    return it->second;
  }

  NormalizeTable table_;
  DType dtype_;
  mutable std::mutex mutex_;
  mutable std::map<int, at::Tensor> device_tables_;
};

}  // namespace

void register_builtin_device_steps(DeviceOpRegistry& registry) {
  registry.register_operation(
      "to_device", "copy the batch to the current CUDA device (or `device`), without waiting",
      [](const OpParams& params) {
        return std::make_shared<ToDevice>(params.get_int("device", -1));
      });
  registry.register_operation(
      "to_torch_image", "[N, H, W, C] -> [N, C, H, W]: a channels_last view, or a copy",
      [](const OpParams& params) {
        return std::make_shared<ToTorchImage>(params.get_bool("channels_last", true));
      });
  registry.register_operation(
      "normalize", "uint8 -> float32/float16: (v - mean[c]) / std[c], CPU tables, one kernel",
      [](const OpParams& params) {
        return std::make_shared<DeviceNormalize>(params.require_list("mean"),
                                                 params.require_list("std"),
                                                 params.get_string("dtype", "float32"));
      });
  registry.register_operation(
      "convert", "cast every element to `dtype`", [](const OpParams& params) {
        return std::make_shared<DeviceConvert>(params.get_string("dtype", "float32"));
      });
}

}  // namespace ffcv::torch_adapter
