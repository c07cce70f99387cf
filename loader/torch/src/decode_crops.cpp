// The device step decode_crops (ffcv/torch/gpu_image_decode.hpp).
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include <limits>
#include <map>
#include <mutex>

#include "crop_resize.hpp"
#include "ffcv/image/encoded_crop.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/resize.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/torch/gpu_image_decode.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "nvjpeg_batch_decoder.hpp"

namespace ffcv::torch_adapter {
namespace {

constexpr std::size_t kFrameRounding = std::size_t{32} << 20;

// A decoded frame's bytes, rounded up so that every frame starts 256-byte aligned.
std::size_t aligned_frame_bytes(int width, int height) {
  return (std::size_t(width) * height * 3 + 255) / 256 * 256;
}

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw Error(std::string("decode_crops: ") + what + ": " + cudaGetErrorString(status));
  }
}

class DecodeCrops final : public DeviceOperation {
 public:
  DecodeCrops(int height, int width, Interpolation interpolation, detail::JpegBackend backend,
              std::int64_t device)
      : height_(height),
        width_(width),
        area_(interpolation == Interpolation::kArea),
        backend_(backend),
        device_(device) {
    if (!torch::cuda::is_available()) throw ConfigError("decode_crops: no CUDA device is visible");
    if (std::int64_t{height_} * width_ * 3 > std::numeric_limits<int>::max()) {
      throw ConfigError("decode_crops: an output of " + std::to_string(height_) + " x " +
                        std::to_string(width_) + " is larger than the kernel takes (2 GiB)");
    }
  }
  std::string name() const override { return "decode_crops"; }
  bool works_on_host() const override { return true; }

  TensorState declare(const TensorState& input) override {
    if (input.dtype.kind != 'u' || input.dtype.itemsize != 1 || input.shape.size() != 1 ||
        input.shape[0] <= kEncodedCropHeaderBytes || input.device != Device::kCpu) {
      throw ConfigError(
          "decode_crops needs the host records of random_resized_crop_encoded or "
          "center_crop_encoded (uint8 [record bytes] cpu), got " +
          input.to_string());
    }
    TensorState out{DType::parse("|u1"),
                    {static_cast<std::uint64_t>(height_), static_cast<std::uint64_t>(width_), 3},
                    Device::kCuda};
    return out;
  }

  at::Tensor apply(const at::Tensor& batch) const override {
    const Stopwatch started;
    TORCH_CHECK(batch.dim() == 2 && batch.scalar_type() == at::kByte && !batch.is_cuda() &&
                    batch.is_contiguous(),
                "decode_crops: expected host records uint8 [N, bytes], got ", batch.sizes());
    // The current device, whose current stream is the transfer's (DeviceTransfer sets both); a
    // step built for another device would run on a stream nobody waits for.
    const at::Device device(at::kCUDA, c10::cuda::current_device());
    if (device_ >= 0 && device_ != device.index()) {
      throw Error("decode_crops: built for CUDA device " + std::to_string(device_) +
                  ", but the batch is being prepared on device " + std::to_string(device.index()));
    }

    const c10::cuda::CUDAGuard guard(device);
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
    const std::int64_t count = batch.size(0), record_bytes = batch.size(1);
    const std::size_t sample_bytes = std::size_t(height_) * width_ * 3;
    at::Tensor out =
        at::empty({count, height_, width_, 3}, at::TensorOptions().dtype(at::kByte).device(device));
    auto* out_data = out.data_ptr<std::uint8_t>();
    const auto* records = batch.data_ptr<std::uint8_t>();

    std::vector<EncodedCropHeader> headers;
    std::vector<std::int64_t> jpeg_rows;
    std::size_t frame_bytes = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint8_t* record = records + i * record_bytes;
      const EncodedCropHeader header =
          EncodedCropHeader::load({record, static_cast<std::size_t>(record_bytes)});
      if (header.out_height != height_ || header.out_width != width_) {
        throw ConfigError("decode_crops: sample " + std::to_string(header.sample) +
                          " was cut for " + std::to_string(header.out_height) + " x " +
                          std::to_string(header.out_width) + ", this step outputs " +
                          std::to_string(height_) + " x " + std::to_string(width_));
      }
      if (header.kind == EncodedCropKind::kPixels) {
        check_cuda(cudaMemcpyAsync(out_data + i * sample_bytes, record + kEncodedCropHeaderBytes,
                                   sample_bytes, cudaMemcpyHostToDevice, stream),
                   "copying a raw sample's pixels");
      } else {
        jpeg_rows.push_back(i);
        frame_bytes += aligned_frame_bytes(header.frame_width, header.frame_height);
      }
      headers.push_back(header);
    }
    {
      const std::lock_guard lock(mutex_);
      ++counts_.batches;
      counts_.pixel_records += count - static_cast<std::int64_t>(jpeg_rows.size());
      counts_.records_seconds += started.seconds();
      if (jpeg_rows.empty()) {
        counts_.host_seconds += started.seconds();
        return out;
      }
    }

    // Whole frames, decoded side by side into one buffer of the caching allocator, its size
    // rounded up so that batches of slightly different totals reuse one cached block.
    frame_bytes = (frame_bytes + kFrameRounding - 1) / kFrameRounding * kFrameRounding;
    at::Tensor frames = at::empty({static_cast<std::int64_t>(frame_bytes)},
                                  at::TensorOptions().dtype(at::kByte).device(device));
    std::vector<detail::JpegFrame> jpegs;
    std::size_t offset = 0;
    for (const std::int64_t row : jpeg_rows) {
      const EncodedCropHeader& header = headers[static_cast<std::size_t>(row)];
      detail::JpegFrame frame;
      frame.data = records + row * record_bytes + kEncodedCropHeaderBytes;
      frame.bytes = header.payload_bytes;
      frame.width = header.frame_width;
      frame.height = header.frame_height;
      frame.hardware_ok = header.hardware_ok;
      frame.target = frames.data_ptr<std::uint8_t>() + offset;
      offset += aligned_frame_bytes(frame.width, frame.height);
      jpegs.push_back(frame);
    }
    // The stream's own decoder: DeviceTransfer's preparing threads each enqueue on a stream of
    // their own, so batches prepared side by side decode side by side.
    const Stopwatch decoder_started;
    StreamDecoder& held = decoder_for(device.index(), stream);
    const double decoder_seconds = decoder_started.seconds();
    const Stopwatch nvjpeg_started;
    detail::NvjpegBatchDecoder::Outcome outcome;
    std::string backend;
    {
      const std::lock_guard use(held.mutex);
      outcome = held.decoder->decode(jpegs, stream);
      backend = held.decoder->description();
    }
    const double nvjpeg_seconds = nvjpeg_started.seconds();
    std::uint64_t host_frames = 0;
    for (const auto& [position, reason] : outcome.failed) {
      decode_on_host(jpegs[position], headers[static_cast<std::size_t>(jpeg_rows[position])],
                     reason, stream);
      ++host_frames;
    }

    // The windows, through pinned memory (the caching host allocator keeps it until the copy).
    const auto jobs_bytes = static_cast<std::int64_t>(jpegs.size() * sizeof(detail::CropJob));
    at::Tensor host_jobs =
        at::empty({jobs_bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    auto* jobs = reinterpret_cast<detail::CropJob*>(host_jobs.data_ptr<std::uint8_t>());
    for (std::size_t j = 0; j < jpegs.size(); ++j) {
      const EncodedCropHeader& header = headers[static_cast<std::size_t>(jpeg_rows[j])];
      jobs[j] = {jpegs[j].target,     jpegs[j].width,      jpegs[j].height,
                 header.window.top,   header.window.left,  header.window.height,
                 header.window.width, header.flip ? 1 : 0, static_cast<int>(jpeg_rows[j])};
    }
    const at::Tensor device_jobs = host_jobs.to(device, /*non_blocking=*/true);
    detail::crop_resize_cuda(reinterpret_cast<const detail::CropJob*>(device_jobs.data_ptr()),
                             static_cast<int>(jpegs.size()), out_data, height_, width_, area_,
                             stream);
    const std::lock_guard lock(mutex_);
    counts_.backend = backend;
    counts_.hardware_frames += outcome.hardware_frames;
    counts_.hybrid_frames += outcome.hybrid_frames;
    counts_.host_frames += host_frames;
    counts_.nvjpeg_host_seconds += nvjpeg_seconds;
    counts_.nvjpeg_headers_seconds += outcome.headers_seconds;
    counts_.nvjpeg_hardware_seconds += outcome.hardware_seconds;
    counts_.nvjpeg_hybrid_seconds += outcome.hybrid_seconds;
    counts_.decoder_start_seconds += decoder_seconds;
    counts_.host_seconds += started.seconds() - decoder_seconds;
    return out;
  }

  GpuDecodeCounts counts() const {
    std::lock_guard lock(mutex_);
    GpuDecodeCounts counts = counts_;
    // nvJPEG's memory over the decoders of every stream this step decoded on.
    for (const auto& [key, held] : decoders_) {
      const detail::NvjpegMemory::Counts memory = held->decoder->memory_counts();
      counts.nvjpeg_allocations += memory.allocations;
      counts.nvjpeg_reuses += memory.reuses;
    }
    return counts;
  }

 private:
  // A decoder (from the process-wide pool) per stream it decodes on, used under its mutex.
  struct StreamDecoder {
    std::shared_ptr<detail::NvjpegBatchDecoder> decoder;
    std::mutex mutex;
  };
  StreamDecoder& decoder_for(int device, cudaStream_t stream) const {
    const auto key = std::make_pair(device, stream);
    {
      const std::lock_guard lock(mutex_);
      const auto found = decoders_.find(key);
      if (found != decoders_.end()) return *found->second;
    }
    // Started (about a second the first time in a process) without holding the step's lock.
    auto held = std::make_unique<StreamDecoder>();
    held->decoder = detail::pooled_decoder(device, backend_);
    const std::lock_guard lock(mutex_);
    auto& slot = decoders_[key];
    if (slot == nullptr) slot = std::move(held);
    return *slot;
  }

  // libjpeg on the host, as the CPU path decodes; the frame goes up synchronously.
  void decode_on_host(const detail::JpegFrame& frame, const EncodedCropHeader& header,
                      const std::string& reason, cudaStream_t stream) const {
    RgbImage image;
    try {
      image = decode_jpeg({frame.data, frame.bytes});
    } catch (const std::exception& error) {
      throw Error("decode_crops: sample " + std::to_string(header.sample) +
                  ": nvJPEG could not decode its JPEG (" + reason +
                  ") and neither could libjpeg (" + error.what() + ")");
    }
    if (image.width != frame.width || image.height != frame.height) {
      throw Error("decode_crops: sample " + std::to_string(header.sample) + ": libjpeg decoded " +
                  std::to_string(image.width) + " x " + std::to_string(image.height) +
                  ", the record says " + std::to_string(frame.width) + " x " +
                  std::to_string(frame.height));
    }
    check_cuda(cudaMemcpyAsync(frame.target, image.pixels.data(), image.byte_size(),
                               cudaMemcpyHostToDevice, stream),
               "copying a host-decoded frame");
    check_cuda(cudaStreamSynchronize(stream), "copying a host-decoded frame");
  }

  int height_, width_;
  bool area_;
  detail::JpegBackend backend_;
  std::int64_t device_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, cudaStream_t>, std::unique_ptr<StreamDecoder>> decoders_;
  mutable GpuDecodeCounts counts_;
};

int side(const OpParams& params, const char* key) {
  const std::int64_t size = params.get_int("size", 0);
  const std::int64_t value = params.get_int(key, size);
  if (value < 1 || value > 65535) {
    throw ConfigError("decode_crops: give the output `size` (or `height` and `width`), 1..65535");
  }
  return static_cast<int>(value);
}

}  // namespace

bool gpu_image_decode_built() { return true; }

GpuDecodeCounts gpu_decode_counts(const DeviceOperation& step) {
  const auto* decode = dynamic_cast<const DecodeCrops*>(&step);
  return decode == nullptr ? GpuDecodeCounts{} : decode->counts();
}

void register_gpu_image_steps(DeviceOpRegistry& registry) {
  registry.register_operation(
      "decode_crops",
      "host records of *_crop_encoded -> uint8 [N, H, W, 3] on CUDA: nvJPEG decode (hardware "
      "engines where present), then crop, resize and flip in one kernel",
      [](const OpParams& params) {
        return std::make_shared<DecodeCrops>(
            side(params, "height"), side(params, "width"),
            parse_interpolation(params.get_string("interpolation", "area")),
            detail::parse_jpeg_backend(params.get_string("backend", "auto")),
            params.get_int("device", -1));
      });
}

}  // namespace ffcv::torch_adapter
