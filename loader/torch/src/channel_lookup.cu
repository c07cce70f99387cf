// The CUDA per-channel lookup (channel_lookup.hpp). Each block first copies the table into
// shared memory (at most 48 KiB: channels * 256 * entry_bytes), then threads stride over the
// elements; consecutive threads read consecutive bytes and write consecutive entries.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "channel_lookup.hpp"

namespace ffcv::torch_adapter::detail {
namespace {

template <typename Entry>
__global__ void lookup_kernel(const std::uint8_t* __restrict__ in, Entry* __restrict__ out,
                              const Entry* __restrict__ table, std::uint64_t count, int channels) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Entry* shared_table = reinterpret_cast<Entry*>(shared_bytes);
  const int entries = channels * 256;
  for (int i = threadIdx.x; i < entries; i += blockDim.x) shared_table[i] = table[i];
  __syncthreads();
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    out[i] = shared_table[static_cast<int>(i % channels) * 256 + in[i]];
  }
}

}  // namespace

void channel_lookup_cuda(const std::uint8_t* in, void* out, const void* table, std::uint64_t count,
                         int channels, int entry_bytes, void* stream) {
  if (count == 0) return;
  const std::size_t shared = static_cast<std::size_t>(channels) * 256 * entry_bytes;
  if (shared > 48 * 1024) {
    throw std::runtime_error("normalize: " + std::to_string(channels) +
                             " channels need more than 48 KiB of lookup table on the GPU");
  }
  constexpr int kThreads = 256;
  // Enough blocks to fill the device several times over; each block strides over the rest.
  const std::uint64_t wanted = (count + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  if (entry_bytes == 4) {
    lookup_kernel<<<blocks, kThreads, shared, cuda_stream>>>(
        in, static_cast<std::uint32_t*>(out), static_cast<const std::uint32_t*>(table), count,
        channels);
  } else {
    lookup_kernel<<<blocks, kThreads, shared, cuda_stream>>>(
        in, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(table), count,
        channels);
  }
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("normalize: CUDA kernel launch failed: ") +
                             cudaGetErrorString(status));
  }
}

}  // namespace ffcv::torch_adapter::detail
