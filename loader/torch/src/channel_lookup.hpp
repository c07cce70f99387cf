// Internal: the per-channel table lookup behind the device `normalize` on a GPU, as a plain
// kernel with no LibTorch (on the host it is apply_normalize_table, ffcv/normalize_table.hpp).
// For `count` uint8 elements stored channel-innermost (NHWC memory):
//   out[i] = table[(i % channels) * 256 + in[i]]
// with table entries `entry_bytes` (2: float16, 4: float32) wide, copied bit for bit.
#pragma once

#include <cstdint>

namespace ffcv::torch_adapter::detail {

// `in`, `out` and `table` are device pointers; enqueued on `stream` (a cudaStream_t). Throws
// std::runtime_error when the launch fails.
void channel_lookup_cuda(const std::uint8_t* in, void* out, const void* table, std::uint64_t count,
                         int channels, int entry_bytes, void* stream);

}  // namespace ffcv::torch_adapter::detail
