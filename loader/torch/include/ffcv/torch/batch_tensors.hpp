// The LibTorch adapter: a loader Batch as torch tensors, without copying.
//
// Each tensor views its output's memory in the batch slot and keeps the batch lease alive: the
// slot returns to the loader's ring only when the last tensor of the batch is destroyed. This
// fixes FFCV's silent overwriting of batches the consumer still holds (FFCV issue #231).
//
// This is the only part of the loader that sees LibTorch; the loader core stays free of it.
#pragma once

#include <torch/types.h>

#include <vector>

#include "ffcv/loader.hpp"

namespace ffcv::torch_adapter {

// The torch scalar type of a numpy-style dtype. Throws ConfigError for types torch lacks
// (big-endian, complex of other sizes).
at::ScalarType scalar_type(const DType& dtype);
// The reverse: the little-endian numpy dtype of a torch type. Throws ConfigError for types
// numpy lacks (bfloat16, quantized types).
DType numpy_dtype(at::ScalarType type);

// One tensor per output, shaped [batch size, ...sample shape], on the CPU, sharing the batch's
// memory. The batch is consumed: it is released when every returned tensor is gone. Throws
// ConfigError for a ragged output (BatchTensor::layout), which is no single tensor.
std::vector<at::Tensor> to_tensors(Batch batch);

// Batch memory from LibTorch's pinned host allocator when CUDA is available (so host-to-device
// copies can run asynchronously), else nullopt. Pass it as LoaderOptions::allocator.
std::optional<BatchAllocator> pinned_allocator();

}  // namespace ffcv::torch_adapter
