#include "ffcv/torch/batch_tensors.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <mutex>

#include "ffcv/util/errors.hpp"

namespace ffcv::torch_adapter {

at::ScalarType scalar_type(const DType& dtype) {
  if (dtype.byte_order == '>') {
    throw ConfigError("big-endian dtype " + dtype.typestr() + " has no torch equivalent");
  }
  switch (dtype.kind) {
    case 'b':
      return at::kBool;
    case 'u':
      switch (dtype.itemsize) {
        case 1:
          return at::kByte;
        case 2:
          return at::kUInt16;
        case 4:
          return at::kUInt32;
        case 8:
          return at::kUInt64;
      }
      break;
    case 'i':
      switch (dtype.itemsize) {
        case 1:
          return at::kChar;
        case 2:
          return at::kShort;
        case 4:
          return at::kInt;
        case 8:
          return at::kLong;
      }
      break;
    case 'f':
      switch (dtype.itemsize) {
        case 2:
          return at::kHalf;
        case 4:
          return at::kFloat;
        case 8:
          return at::kDouble;
      }
      break;
    case 'c':
      if (dtype.itemsize == 8) return at::kComplexFloat;
      if (dtype.itemsize == 16) return at::kComplexDouble;
      break;
  }
  throw ConfigError("dtype " + dtype.typestr() + " has no torch equivalent");
}

DType numpy_dtype(at::ScalarType type) {
  // Every type scalar_type() gives, in the same order of kinds and sizes.
  for (const char* text : {"|b1", "|u1", "<u2", "<u4", "<u8", "|i1", "<i2", "<i4", "<i8", "<f2",
                           "<f4", "<f8", "<c8", "<c16"}) {
    const DType dtype = DType::parse(text);
    if (scalar_type(dtype) == type) return dtype;
  }
  throw ConfigError(std::string("torch type ") + c10::toString(type) + " has no numpy dtype");
}

std::vector<at::Tensor> to_tensors(Batch batch) {
  auto lease = std::make_shared<Batch>(std::move(batch));
  std::vector<at::Tensor> tensors;
  for (std::size_t i = 0; i < lease->num_outputs(); ++i) {
    const BatchTensor output = lease->output(i);
    if (output.layout) {
      throw ConfigError("output '" + *output.name +
                        "' is ragged (a varying number of rows per sample), which the torch "
                        "adapter does not hand out as one tensor; read its values and offsets or "
                        "lengths from the Batch (BatchTensor), or load it from Python");
    }
    std::vector<std::int64_t> shape = {static_cast<std::int64_t>(output.count)};
    for (const std::uint64_t d : output.state->shape) shape.push_back(static_cast<std::int64_t>(d));
    // The deleter owns a reference to the lease: the slot is released with the last tensor.
    tensors.push_back(torch::from_blob(
        const_cast<std::uint8_t*>(output.data), shape, [lease](void*) {},
        torch::TensorOptions().dtype(scalar_type(output.state->dtype))));
  }
  return tensors;
}

std::optional<BatchAllocator> pinned_allocator() {
  if (!torch::cuda::is_available()) return std::nullopt;
  // Pinned blocks come from LibTorch's caching host allocator; each DataPtr is kept until the
  // loader frees the block.
  struct Blocks {
    std::mutex mutex;
    std::map<void*, c10::DataPtr> live;
  };
  auto blocks = std::make_shared<Blocks>();
  c10::Allocator* allocator = at::detail::getCUDAHooks().getPinnedMemoryAllocator();
  return BatchAllocator{[blocks, allocator](std::uint64_t bytes) -> void* {
                          c10::DataPtr block = allocator->allocate(bytes);
                          void* memory = block.get();
                          std::lock_guard lock(blocks->mutex);
                          blocks->live.emplace(memory, std::move(block));
                          return memory;
                        },
                        [blocks](void* memory) {
                          std::lock_guard lock(blocks->mutex);
                          blocks->live.erase(memory);
                        }};
}

}  // namespace ffcv::torch_adapter
