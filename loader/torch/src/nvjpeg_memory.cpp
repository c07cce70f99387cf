#include "nvjpeg_memory.hpp"

namespace ffcv::torch_adapter::detail {
namespace {

// Whether the GPU has passed the event; clears the "not ready" CUDA keeps as the last error.
bool passed(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  return status == cudaSuccess;
}

}  // namespace

NvjpegMemory::~NvjpegMemory() {
  for (Pool* pool : {&device_, &pinned_}) {
    for (Block& block : pool->idle) release(*pool, block);
    for (const auto& [pointer, bytes] : pool->live) {
      Block block{pointer, bytes, nullptr};
      release(*pool, block);
    }
  }
}

void NvjpegMemory::release(Pool& pool, Block& block) {
  if (block.freed != nullptr) cudaEventDestroy(block.freed);
  if (pool.pinned) {
    cudaFreeHost(block.pointer);
  } else {
    cudaFree(block.pointer);
  }
  block = Block{};
}

void NvjpegMemory::set_stream(cudaStream_t stream) {
  const std::lock_guard lock(mutex_);
  stream_ = stream;
}

NvjpegMemory::Counts NvjpegMemory::counts() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

void* NvjpegMemory::take(Pool& pool, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  // The smallest finished block that fits without wasting more than its request again.
  std::size_t best = pool.idle.size();
  for (std::size_t i = 0; i < pool.idle.size(); ++i) {
    const Block& block = pool.idle[i];
    if (block.bytes < bytes || block.bytes > 2 * bytes + (std::size_t{1} << 20)) continue;
    if (best < pool.idle.size() && pool.idle[best].bytes <= block.bytes) continue;
    if (passed(block.freed)) best = i;
  }
  if (best < pool.idle.size()) {
    Block block = pool.idle[best];
    pool.idle.erase(pool.idle.begin() + static_cast<std::ptrdiff_t>(best));
    cudaEventDestroy(block.freed);
    pool.live.emplace(block.pointer, block.bytes);
    ++counts_.reuses;
    return block.pointer;
  }
  void* pointer = nullptr;
  const cudaError_t status = pool.pinned ? cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault)
                                         : cudaMalloc(&pointer, bytes);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  pool.live.emplace(pointer, bytes);
  ++counts_.allocations;
  return pointer;
}

bool NvjpegMemory::give(Pool& pool, void* pointer, cudaStream_t stream) {
  if (pointer == nullptr) return true;
  const std::lock_guard lock(mutex_);
  const auto found = pool.live.find(pointer);
  if (found == pool.live.end()) return false;
  Block block{pointer, found->second, nullptr};
  pool.live.erase(found);
  if (cudaEventCreateWithFlags(&block.freed, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventRecord(block.freed, stream != nullptr ? stream : stream_) != cudaSuccess) {
    // Without an event the block cannot be known free: hand it back (this waits for the GPU).
    (void)cudaGetLastError();
    release(pool, block);
    ++counts_.returned;
    return true;
  }
  pool.idle.push_back(block);
  if (pool.idle.size() > kIdleBlocks) {
    for (std::size_t i = 0; i < pool.idle.size(); ++i) {
      if (!passed(pool.idle[i].freed)) continue;
      release(pool, pool.idle[i]);
      pool.idle.erase(pool.idle.begin() + static_cast<std::ptrdiff_t>(i));
      ++counts_.returned;
      break;
    }
  }
  return true;
}

void* NvjpegMemory::take_device(std::size_t bytes) { return take(device_, bytes); }

void NvjpegMemory::give_device(void* block, cudaStream_t stream) { give(device_, block, stream); }

template <NvjpegMemory::Pool NvjpegMemory::*kPool>
int NvjpegMemory::allocate(void* context, void** pointer, std::size_t bytes, cudaStream_t) {
  auto* memory = static_cast<NvjpegMemory*>(context);
  *pointer = bytes == 0 ? nullptr : memory->take(memory->*kPool, bytes);
  return *pointer != nullptr || bytes == 0 ? 0 : 1;
}

template <NvjpegMemory::Pool NvjpegMemory::*kPool>
int NvjpegMemory::free_into(void* context, void* pointer, std::size_t, cudaStream_t stream) {
  auto* memory = static_cast<NvjpegMemory*>(context);
  return memory->give(memory->*kPool, pointer, stream) ? 0 : 1;
}

nvjpegDevAllocatorV2_t NvjpegMemory::device_allocator() {
  return {&NvjpegMemory::allocate<&NvjpegMemory::device_>,
          &NvjpegMemory::free_into<&NvjpegMemory::device_>, this};
}

nvjpegPinnedAllocatorV2_t NvjpegMemory::pinned_allocator() {
  return {&NvjpegMemory::allocate<&NvjpegMemory::pinned_>,
          &NvjpegMemory::free_into<&NvjpegMemory::pinned_>, this};
}

}  // namespace ffcv::torch_adapter::detail
