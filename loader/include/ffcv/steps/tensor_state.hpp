// TensorState: what one sample looks like at a point in a pipeline (element type, shape,
// device). Every operation declares its output state from its input state before an epoch
// starts, so the loader can size every buffer once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/format/dtype.hpp"

namespace ffcv {

enum class Device { kCpu, kCuda };

struct TensorState {
  DType dtype;
  std::vector<std::uint64_t> shape;  // per sample, without the batch dimension
  Device device = Device::kCpu;

  std::uint64_t element_count() const;
  std::uint64_t byte_size() const { return element_count() * dtype.itemsize; }
  std::string to_string() const;  // e.g. "|u1[224, 224, 3] cpu"
  bool operator==(const TensorState&) const = default;
};

}  // namespace ffcv
