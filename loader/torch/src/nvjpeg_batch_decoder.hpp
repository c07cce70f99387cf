// NvjpegBatchDecoder: nvJPEG's batched decode of whole JPEG frames into device memory, as
// interleaved RGB (width * 3 bytes per row), for the device step decode_crops.
//
// Two nvJPEG instances: the hardware backend (the GPU's JPEG engines, for baseline 8-bit
// three-component files) where the device has one, and the GPU-hybrid backend (Huffman decoding
// on the GPU for large batches of baseline files, on this thread otherwise, the IDCT and colour
// conversion on the GPU) for everything else, progressive files included: batched when there are
// more than 50 of them, one at a time otherwise. Frames the hardware backend rejects are decoded
// again by the hybrid one; a batch the hybrid backend rejects is decoded one frame at a time, so
// one bad file costs only itself.
//
// Steady state without waits for the device: nvJPEG's memory comes from NvjpegMemory (no
// cudaFree or cudaFreeHost, which wait for the training step too), and the hardware backend's
// batched state is initialised for a capacity (the largest batch seen, rounded up to 32 frames)
// rather than for each batch's count, which differs from batch to batch with the mix of raw and
// JPEG samples: a batch with fewer frames is made up with a tiny JPEG decoded into scratch.
//
// Threads: one decoder is used by one thread at a time (decode_crops holds a lock around it).
// Errors: construction throws ConfigError when `Backend::kHardware` is asked for on a device
// without JPEG engines, or Error when nvJPEG cannot start; decode() reports the frames it could
// not decode instead of throwing for them.
#pragma once

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvjpeg_memory.hpp"

namespace ffcv::torch_adapter::detail {

struct JpegFrame {
  const std::uint8_t* data = nullptr;  // host memory, valid until the stream passes the decode
  std::size_t bytes = 0;
  int width = 0;
  int height = 0;
  bool hardware_ok = false;        // baseline, 8-bit, three components (EncodedCropHeader)
  std::uint8_t* target = nullptr;  // device memory of height * width * 3 bytes
};

enum class JpegBackend { kAuto, kHardware, kHybrid };

// "auto", "hardware" or "hybrid"; ConfigError otherwise.
JpegBackend parse_jpeg_backend(const std::string& name);

class NvjpegBatchDecoder {
 public:
  explicit NvjpegBatchDecoder(JpegBackend wanted);
  ~NvjpegBatchDecoder();
  NvjpegBatchDecoder(const NvjpegBatchDecoder&) = delete;
  NvjpegBatchDecoder& operator=(const NvjpegBatchDecoder&) = delete;

  // "hardware (N engines)" or "gpu_hybrid", and why when the hardware backend is missing.
  std::string description() const { return description_; }
  bool has_hardware() const { return hardware_ != nullptr; }
  // nvJPEG's memory requests served by CUDA and by the cache so far.
  NvjpegMemory::Counts memory_counts() const { return memory_.counts(); }

  struct Outcome {
    std::uint64_t hardware_frames = 0;  // decoded by the hardware engines
    std::uint64_t hybrid_frames = 0;    // by the hybrid backend
    // The frames that could not be decoded: position and nvJPEG's reason.
    std::vector<std::pair<std::size_t, std::string>> failed;
    // Host time: reading the headers again, in the hardware backend's calls, in the hybrid's.
    double headers_seconds = 0, hardware_seconds = 0, hybrid_seconds = 0;
  };
  // Enqueues the decode of every frame on `stream`. nvJPEG's states keep buffers the GPU may
  // still read: a call on another stream than the last one first waits for the last one.
  Outcome decode(std::span<const JpegFrame> frames, cudaStream_t stream);
  // Waits until the GPU has finished the last call's work (before the decoder changes hands).
  void settle();

 private:
  struct Instance {
    nvjpegHandle_t handle = nullptr;
    nvjpegJpegState_t batch_state = nullptr;
    nvjpegJpegState_t single_state = nullptr;
    int initialized_for = -1;  // batch size of the last nvjpegDecodeBatchedInitialize
  };
  // Pads the batch with the filler up to `capacity` entries (the hardware batch's size).
  void pad_to(std::vector<const unsigned char*>& data, std::vector<std::size_t>& lengths,
              std::vector<nvjpegImage_t>& images, std::size_t capacity);
  // Creates the instance's handle and states (`single`: the one-frame state too); on failure
  // leaves it empty and returns nvJPEG's status.
  nvjpegStatus_t start(Instance& instance, nvjpegBackend_t backend, bool single);
  static void stop(Instance& instance);
  // Decodes `positions` of `frames` with `instance`, batched; true on success.
  bool decode_batched(Instance& instance, std::span<const JpegFrame> frames,
                      const std::vector<std::size_t>& positions, cudaStream_t stream,
                      std::string& reason);

  // Declared first: the handles below free into it when they are destroyed.
  NvjpegMemory memory_;
  Instance hardware_instance_;
  Instance hybrid_instance_;
  Instance* hardware_ = nullptr;  // &hardware_instance_ when the device has JPEG engines
  std::string description_;
  bool own_allocators_ = false;  // an instance refused NvjpegMemory's (then cudaFree waits)
  cudaStream_t last_stream_ = nullptr;
  // The filler that makes up a short hardware batch, and where its copies are decoded.
  std::vector<std::uint8_t> filler_;
  void* filler_target_ = nullptr;
  std::size_t filler_slots_ = 0;
  bool used_ = false;
};

// A decoder for the current CUDA device, from a process-wide pool. Starting nvJPEG (its handles
// and the hardware engines' state) takes about a second, and device steps are built anew each
// epoch, so a decoder goes back to the pool when its holder drops it and the next step of the
// same device and backend takes it again. A decoder is held by one step at a time.
std::shared_ptr<NvjpegBatchDecoder> pooled_decoder(int device, JpegBackend backend);

// nvJPEG's status as words.
std::string nvjpeg_status_text(nvjpegStatus_t status);

}  // namespace ffcv::torch_adapter::detail
