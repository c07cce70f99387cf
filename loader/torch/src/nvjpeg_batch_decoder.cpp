#include "nvjpeg_batch_decoder.hpp"

#include "ffcv/util/errors.hpp"

namespace ffcv::torch_adapter::detail {
namespace {

constexpr std::size_t kHybridBatchMin = 50;

void destroy(nvjpegHandle_t& handle, nvjpegJpegState_t& batch,
             nvjpegJpegState_t& single) {
  if (batch != nullptr) nvjpegJpegStateDestroy(batch);
  if (single != nullptr) nvjpegJpegStateDestroy(single);
  if (handle != nullptr) nvjpegDestroy(handle);
  batch = single = nullptr;
  handle = nullptr;
}

nvjpegImage_t rgb_image(const JpegFrame& frame) {
  nvjpegImage_t image{};
  image.channel[0] = frame.target;
  image.pitch[0] = static_cast<std::size_t>(frame.width) * 3;
  return image;
}

}  // namespace

std::string nvjpeg_status_text(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocation failed (out of GPU memory?)";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "not available on this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "not implemented for this backend";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
    default: return "status " + std::to_string(static_cast<int>(status));
  }
}

JpegBackend parse_jpeg_backend(const std::string& name) {
  if (name == "auto") return JpegBackend::kAuto;
  if (name == "hardware") return JpegBackend::kHardware;
  if (name == "hybrid") return JpegBackend::kHybrid;
  throw ConfigError("decode_crops: backend must be auto, hardware or hybrid, not '" + name + "'");
}

NvjpegBatchDecoder::NvjpegBatchDecoder(JpegBackend wanted) {
  std::string no_hardware;
  if (wanted != JpegBackend::kHybrid) {
    Instance& hw = hardware_instance_;
    nvjpegStatus_t status = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hw.handle);
    if (status == NVJPEG_STATUS_SUCCESS) {
      status = nvjpegJpegStateCreate(hw.handle, &hw.batch_state);
    }
    if (status == NVJPEG_STATUS_SUCCESS) {
      hardware_ = &hw;
      unsigned engines = 0, cores = 0;
      nvjpegGetHardwareDecoderInfo(hw.handle, &engines, &cores);
      description_ = "hardware (" + std::to_string(engines) + " engines x " +
                     std::to_string(cores) + " cores)";
    } else {
      no_hardware = nvjpeg_status_text(status);
      destroy(hw.handle, hw.batch_state, hw.single_state);
      if (wanted == JpegBackend::kHardware) {
        throw ConfigError("decode_crops: backend = hardware, but this GPU's hardware JPEG decoder "
                          "is not available (nvJPEG: " + no_hardware + ")");
      }
    }
  }
  Instance& hybrid = hybrid_instance_;
  nvjpegStatus_t status =
      nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID, nullptr, nullptr, 0, &hybrid.handle);
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegJpegStateCreate(hybrid.handle, &hybrid.batch_state);
  }
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegJpegStateCreate(hybrid.handle, &hybrid.single_state);
  }
  if (status != NVJPEG_STATUS_SUCCESS) {
    destroy(hybrid.handle, hybrid.batch_state, hybrid.single_state);
    destroy(hardware_instance_.handle, hardware_instance_.batch_state,
            hardware_instance_.single_state);
    throw Error("decode_crops: nvJPEG could not start (" + nvjpeg_status_text(status) + ")");
  }
  if (hardware_ == nullptr) {
    description_ = "gpu_hybrid";
    if (!no_hardware.empty()) description_ += " (no hardware decoder: " + no_hardware + ")";
  }
}

NvjpegBatchDecoder::~NvjpegBatchDecoder() {
  destroy(hybrid_instance_.handle, hybrid_instance_.batch_state,
          hybrid_instance_.single_state);
  destroy(hardware_instance_.handle, hardware_instance_.batch_state,
          hardware_instance_.single_state);
}

bool NvjpegBatchDecoder::decode_batched(Instance& instance, std::span<const JpegFrame> frames,
                                        const std::vector<std::size_t>& positions,
                                        cudaStream_t stream, std::string& reason) {
  if (positions.empty()) return true;
  std::vector<const unsigned char*> data;
  std::vector<std::size_t> lengths;
  std::vector<nvjpegImage_t> images;
  for (const std::size_t p : positions) {
    data.push_back(frames[p].data);
    lengths.push_back(frames[p].bytes);
    images.push_back(rgb_image(frames[p]));
  }
  const int count = static_cast<int>(positions.size());
  nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
  if (instance.initialized_for != count) {
    status = nvjpegDecodeBatchedInitialize(instance.handle, instance.batch_state, count, 1,
                                           NVJPEG_OUTPUT_RGBI);
    instance.initialized_for = status == NVJPEG_STATUS_SUCCESS ? count : -1;
  }
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegDecodeBatched(instance.handle, instance.batch_state, data.data(),
                                 lengths.data(), images.data(), stream);
  }
  if (status != NVJPEG_STATUS_SUCCESS) {
    reason = nvjpeg_status_text(status);
    instance.initialized_for = -1;  // a failed batch needs a new initialisation
    return false;
  }
  return true;
}

std::vector<std::pair<std::size_t, std::string>> NvjpegBatchDecoder::decode(
    std::span<const JpegFrame> frames, cudaStream_t stream) {
  std::vector<std::size_t> on_hardware, on_hybrid;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    (hardware_ != nullptr && frames[i].hardware_ok ? on_hardware : on_hybrid).push_back(i);
  }
  std::string reason;
  if (hardware_ != nullptr && !decode_batched(*hardware_, frames, on_hardware, stream, reason)) {
    on_hybrid.insert(on_hybrid.end(), on_hardware.begin(), on_hardware.end());
    on_hardware.clear();
  }
  hardware_frames_ += on_hardware.size();
  std::vector<std::pair<std::size_t, std::string>> failed;
  // The hybrid backend decodes Huffman codes on the GPU only for batches of more than 50 files;
  // fewer go one at a time, which needs no new batch initialisation.
  if (on_hybrid.size() > kHybridBatchMin &&
      decode_batched(hybrid_instance_, frames, on_hybrid, stream, reason)) {
    hybrid_frames_ += on_hybrid.size();
    return failed;
  }
  // One frame at a time, so that a bad file fails alone.
  for (const std::size_t p : on_hybrid) {
    nvjpegImage_t image = rgb_image(frames[p]);
    const nvjpegStatus_t status =
        nvjpegDecode(hybrid_instance_.handle, hybrid_instance_.single_state, frames[p].data,
                     frames[p].bytes, NVJPEG_OUTPUT_RGBI, &image, stream);
    if (status == NVJPEG_STATUS_SUCCESS) {
      ++hybrid_frames_;
    } else {
      failed.emplace_back(p, nvjpeg_status_text(status));
    }
  }
  return failed;
}

}  // namespace ffcv::torch_adapter::detail
