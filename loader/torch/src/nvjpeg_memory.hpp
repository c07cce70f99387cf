// NvjpegMemory: the device and pinned host memory behind one nvJPEG decoder's handles, kept
// for reuse instead of handed back to CUDA.
//
// Why: nvJPEG's own allocators are cudaMalloc/cudaFree and cudaHostAlloc/cudaFreeHost, and
// nvJPEG frees and allocates again whenever a batch needs larger buffers than the last one
// (batches of JPEGs differ in size every time). cudaFree and cudaFreeHost wait for the whole
// device, so each of those frees stalled the decode thread behind the training step running
// beside it. Here a freed block is kept; a later request of about its size takes it again once
// the GPU has passed the free (an event recorded on the stream nvJPEG names, or on the stream
// the decoder last set when it names none). Memory goes back to CUDA only when the cache is
// destroyed, or when more than kIdleBlocks blocks wait idle (then the oldest finished one).
//
// Threads: the allocator callbacks may come from any thread nvJPEG uses; a mutex guards the
// cache. Errors: a failed allocation returns non-zero to nvJPEG, which reports
// NVJPEG_STATUS_ALLOCATOR_FAILURE (decode_crops' "allocation failed (out of GPU memory?)").
#pragma once

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace ffcv::torch_adapter::detail {

class NvjpegMemory {
 public:
  NvjpegMemory() = default;
  ~NvjpegMemory();
  NvjpegMemory(const NvjpegMemory&) = delete;
  NvjpegMemory& operator=(const NvjpegMemory&) = delete;

  // For nvjpegCreateExV2; they point at this object, which must outlive the handles.
  nvjpegDevAllocatorV2_t device_allocator();
  nvjpegPinnedAllocatorV2_t pinned_allocator();

  // The stream that orders frees nvJPEG makes without naming one (the decoder's current one).
  void set_stream(cudaStream_t stream);

  // Device memory for the decoder's own use (e.g. scratch frames), from the same cache.
  void* take_device(std::size_t bytes);
  void give_device(void* block, cudaStream_t stream);

  struct Counts {
    std::uint64_t allocations = 0;  // blocks asked of CUDA
    std::uint64_t reuses = 0;       // requests served from the cache
    std::uint64_t returned = 0;     // blocks handed back to CUDA before destruction
  };
  Counts counts() const;

 private:
  struct Block {
    void* pointer = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t freed = nullptr;  // recorded where the block was given back
  };
  struct Pool {
    bool pinned = false;
    std::vector<Block> idle;            // oldest first
    std::map<void*, std::size_t> live;  // handed out: pointer -> bytes
  };
  static constexpr std::size_t kIdleBlocks = 32;

  void* take(Pool& pool, std::size_t bytes);
  bool give(Pool& pool, void* pointer, cudaStream_t stream);
  static void release(Pool& pool, Block& block);

  // nvJPEG's callbacks (context: this object) for the pool `kPool` (device_ or pinned_).
  template <Pool NvjpegMemory::*kPool>
  static int allocate(void* context, void** pointer, std::size_t bytes, cudaStream_t stream);
  template <Pool NvjpegMemory::*kPool>
  static int free_into(void* context, void* pointer, std::size_t bytes, cudaStream_t stream);

  mutable std::mutex mutex_;
  Pool device_{false, {}, {}};
  Pool pinned_{true, {}, {}};
  cudaStream_t stream_ = nullptr;
  Counts counts_;
};

}  // namespace ffcv::torch_adapter::detail
