#include "nvjpeg_batch_decoder.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::torch_adapter::detail {
namespace {

constexpr std::size_t kHybridBatchMin = 50;
// Hardware batches are sized in steps of this many frames.
constexpr std::size_t kCapacityStep = 32;
// The filler: a small grey baseline JPEG, and nvJPEG's allocation rounding (fewer regrowths as
// batches vary).
constexpr int kFillerSide = 64;
constexpr std::size_t kFillerBytes = std::size_t{kFillerSide} * kFillerSide * 3;
constexpr std::size_t kDevicePadding = std::size_t{2} << 20;
constexpr std::size_t kPinnedPadding = std::size_t{512} << 10;

nvjpegImage_t rgb_image(const JpegFrame& frame) {
  nvjpegImage_t image{};
  image.channel[0] = frame.target;
  image.pitch[0] = static_cast<std::size_t>(frame.width) * 3;
  return image;
}

}  // namespace

std::string nvjpeg_status_text(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocation failed (out of GPU memory?)";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "not available on this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "not implemented for this backend";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "incomplete bitstream";
    default:
      return "status " + std::to_string(static_cast<int>(status));
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
    const nvjpegStatus_t status = start(hardware_instance_, NVJPEG_BACKEND_HARDWARE, false);
    if (status == NVJPEG_STATUS_SUCCESS) {
      hardware_ = &hardware_instance_;
      unsigned engines = 0, cores = 0;
      nvjpegGetHardwareDecoderInfo(hardware_->handle, &engines, &cores);
      description_ = "hardware (" + std::to_string(engines) + " engines x " +
                     std::to_string(cores) + " cores)";
    } else {
      no_hardware = nvjpeg_status_text(status);
      if (wanted == JpegBackend::kHardware) {
        throw ConfigError(
            "decode_crops: backend = hardware, but this GPU's hardware JPEG "
            "decoder is not available (nvJPEG: " +
            no_hardware + ")");
      }
    }
  }
  const nvjpegStatus_t status = start(hybrid_instance_, NVJPEG_BACKEND_GPU_HYBRID, true);
  if (status != NVJPEG_STATUS_SUCCESS) {
    stop(hardware_instance_);
    stop(hybrid_instance_);
    throw Error("decode_crops: nvJPEG could not start (" + nvjpeg_status_text(status) + ")");
  }
  if (hardware_ == nullptr) {
    description_ = "gpu_hybrid";
    if (!no_hardware.empty()) description_ += " (no hardware decoder: " + no_hardware + ")";
  } else {
    RgbImage grey{kFillerSide, kFillerSide, std::vector<std::uint8_t>(kFillerBytes, 128)};
    filler_ = encode_jpeg(grey, 90);
  }
  if (own_allocators_) description_ += ", nvJPEG's own allocators";
}

nvjpegStatus_t NvjpegBatchDecoder::start(Instance& instance, nvjpegBackend_t backend, bool single) {
  nvjpegDevAllocatorV2_t device_allocator = memory_.device_allocator();
  nvjpegPinnedAllocatorV2_t pinned_allocator = memory_.pinned_allocator();
  nvjpegStatus_t status =
      nvjpegCreateExV2(backend, &device_allocator, &pinned_allocator, 0, &instance.handle);
  if (status != NVJPEG_STATUS_SUCCESS) {
    // A backend that takes no such allocators still decodes, with nvJPEG's own.
    status = nvjpegCreateEx(backend, nullptr, nullptr, 0, &instance.handle);
    if (status == NVJPEG_STATUS_SUCCESS) own_allocators_ = true;
  }
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegSetDeviceMemoryPadding(kDevicePadding, instance.handle);
  }
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegSetPinnedMemoryPadding(kPinnedPadding, instance.handle);
  }
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegJpegStateCreate(instance.handle, &instance.batch_state);
  }
  if (status == NVJPEG_STATUS_SUCCESS && single) {
    status = nvjpegJpegStateCreate(instance.handle, &instance.single_state);
  }
  if (status != NVJPEG_STATUS_SUCCESS) stop(instance);
  return status;
}

void NvjpegBatchDecoder::stop(Instance& instance) {
  if (instance.batch_state != nullptr) nvjpegJpegStateDestroy(instance.batch_state);
  if (instance.single_state != nullptr) nvjpegJpegStateDestroy(instance.single_state);
  if (instance.handle != nullptr) nvjpegDestroy(instance.handle);
  instance = Instance{};
}

NvjpegBatchDecoder::~NvjpegBatchDecoder() {
  settle();
  stop(hybrid_instance_);
  stop(hardware_instance_);
  memory_.give_device(filler_target_, last_stream_);
}

void NvjpegBatchDecoder::pad_to(std::vector<const unsigned char*>& data,
                                std::vector<std::size_t>& lengths,
                                std::vector<nvjpegImage_t>& images, std::size_t capacity) {
  const std::size_t missing = capacity - data.size();
  if (missing > filler_slots_) {
    // Given back ordered after the work that may still write the old targets.
    memory_.give_device(filler_target_, last_stream_);
    filler_target_ = memory_.take_device(capacity * kFillerBytes);
    filler_slots_ = filler_target_ == nullptr ? 0 : capacity;
    if (filler_target_ == nullptr) throw Error("decode_crops: out of GPU memory for nvJPEG");
  }
  for (std::size_t i = 0; i < missing; ++i) {
    data.push_back(filler_.data());
    lengths.push_back(filler_.size());
    nvjpegImage_t image{};
    image.channel[0] = static_cast<unsigned char*>(filler_target_) + i * kFillerBytes;
    image.pitch[0] = std::size_t{kFillerSide} * 3;
    images.push_back(image);
  }
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
  // The hardware batch keeps one size (a capacity) while batches vary, made up with the filler;
  // the hybrid backend's rare batches are decoded at their own size.
  int count = static_cast<int>(positions.size());
  const bool padded = &instance == &hardware_instance_ && !filler_.empty();
  if (padded) {
    const int needed =
        static_cast<int>((positions.size() + kCapacityStep - 1) / kCapacityStep * kCapacityStep);
    count = std::max(instance.initialized_for, needed);
    pad_to(data, lengths, images, static_cast<std::size_t>(count));
  }
  nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
  if (instance.initialized_for != count) {
    status = nvjpegDecodeBatchedInitialize(instance.handle, instance.batch_state, count, 1,
                                           NVJPEG_OUTPUT_RGBI);
    instance.initialized_for = status == NVJPEG_STATUS_SUCCESS ? count : -1;
  }
  if (status == NVJPEG_STATUS_SUCCESS) {
    status = nvjpegDecodeBatched(instance.handle, instance.batch_state, data.data(), lengths.data(),
                                 images.data(), stream);
  }
  if (status != NVJPEG_STATUS_SUCCESS && padded && count != static_cast<int>(positions.size())) {
    // Once more without the filler: if that passes, the engines refuse the filler itself and
    // batches go unpadded from now on; if not, a frame of the batch is at fault.
    std::vector<std::uint8_t> filler = std::move(filler_);
    filler_.clear();
    instance.initialized_for = -1;
    const bool decoded = decode_batched(instance, frames, positions, stream, reason);
    if (!decoded) filler_ = std::move(filler);
    return decoded;
  }
  if (status != NVJPEG_STATUS_SUCCESS) {
    reason = nvjpeg_status_text(status);
    instance.initialized_for = -1;  // a failed batch needs a new initialisation
    return false;
  }
  return true;
}

NvjpegBatchDecoder::Outcome NvjpegBatchDecoder::decode(std::span<const JpegFrame> frames,
                                                       cudaStream_t stream) {
  if (used_ && stream != last_stream_) settle();
  used_ = true;
  last_stream_ = stream;
  memory_.set_stream(stream);
  Outcome outcome;
  const Stopwatch headers;
  std::vector<std::size_t> on_hardware, on_hybrid;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    // nvJPEG writes the frame it reads into a slice sized from the record: the two readings of
    // the header must agree, else the frame goes to the host's libjpeg, which checks itself.
    int components = 0;
    nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
    int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
    const nvjpegStatus_t status =
        nvjpegGetImageInfo(hybrid_instance_.handle, frames[i].data, frames[i].bytes, &components,
                           &subsampling, widths, heights);
    if (status != NVJPEG_STATUS_SUCCESS) {
      outcome.failed.emplace_back(i, nvjpeg_status_text(status));
      continue;
    }
    if (widths[0] != frames[i].width || heights[0] != frames[i].height) {
      outcome.failed.emplace_back(i, "its header reads " + std::to_string(widths[0]) + " x " +
                                         std::to_string(heights[0]) + " here");
      continue;
    }
    // The engines take neither 4:1:0 nor 4:1:1 chroma (nvjpeg.h).
    const bool engines = hardware_ != nullptr && frames[i].hardware_ok &&
                         subsampling != NVJPEG_CSS_410 && subsampling != NVJPEG_CSS_411 &&
                         subsampling != NVJPEG_CSS_410V && subsampling != NVJPEG_CSS_UNKNOWN;
    (engines ? on_hardware : on_hybrid).push_back(i);
  }
  outcome.headers_seconds = headers.seconds();
  std::string reason;
  const Stopwatch hardware;
  if (hardware_ != nullptr && !decode_batched(*hardware_, frames, on_hardware, stream, reason)) {
    on_hybrid.insert(on_hybrid.end(), on_hardware.begin(), on_hardware.end());
    on_hardware.clear();
  }
  outcome.hardware_seconds = hardware.seconds();
  outcome.hardware_frames = on_hardware.size();
  const Stopwatch hybrid;
  // The hybrid backend decodes Huffman codes on the GPU only for batches of more than 50 files;
  // fewer go one at a time, which needs no new batch initialisation.
  if (on_hybrid.size() > kHybridBatchMin &&
      decode_batched(hybrid_instance_, frames, on_hybrid, stream, reason)) {
    outcome.hybrid_frames = on_hybrid.size();
    outcome.hybrid_seconds = hybrid.seconds();
    return outcome;
  }
  // One frame at a time, so that a bad file fails alone.
  for (const std::size_t p : on_hybrid) {
    nvjpegImage_t image = rgb_image(frames[p]);
    const nvjpegStatus_t status =
        nvjpegDecode(hybrid_instance_.handle, hybrid_instance_.single_state, frames[p].data,
                     frames[p].bytes, NVJPEG_OUTPUT_RGBI, &image, stream);
    if (status == NVJPEG_STATUS_SUCCESS) {
      ++outcome.hybrid_frames;
    } else {
      outcome.failed.emplace_back(p, nvjpeg_status_text(status));
    }
  }
  outcome.hybrid_seconds = hybrid.seconds();
  return outcome;
}

void NvjpegBatchDecoder::settle() {
  if (used_) cudaStreamSynchronize(last_stream_);
}

std::shared_ptr<NvjpegBatchDecoder> pooled_decoder(int device, JpegBackend backend) {
  struct Pool {
    std::mutex mutex;
    std::map<std::pair<int, JpegBackend>, std::vector<std::unique_ptr<NvjpegBatchDecoder>>> idle;
  };
  // Never destroyed: at exit the CUDA context may already be gone, and nvJPEG's teardown with it.
  static Pool* pool = new Pool;
  const auto key = std::make_pair(device, backend);
  std::unique_ptr<NvjpegBatchDecoder> decoder;
  {
    const std::lock_guard lock(pool->mutex);
    auto& idle = pool->idle[key];
    if (!idle.empty()) {
      decoder = std::move(idle.back());
      idle.pop_back();
    }
  }
  if (decoder == nullptr) decoder = std::make_unique<NvjpegBatchDecoder>(backend);
  return std::shared_ptr<NvjpegBatchDecoder>(decoder.release(), [key](NvjpegBatchDecoder* held) {
    held->settle();  // the next holder may decode on another stream
    const std::lock_guard lock(pool->mutex);
    pool->idle[key].emplace_back(held);
  });
}

}  // namespace ffcv::torch_adapter::detail
