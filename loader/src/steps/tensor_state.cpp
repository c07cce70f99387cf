#include "ffcv/steps/tensor_state.hpp"

#include <numeric>

#include "util/shape_text.hpp"

namespace ffcv {

std::uint64_t TensorState::element_count() const {
  return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1}, std::multiplies<>());
}

std::string TensorState::to_string() const {
  return dtype.typestr() + shape_text(shape) + " " + (device == Device::kCpu ? "cpu" : "cuda");
}

}  // namespace ffcv
