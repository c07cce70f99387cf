#include "ffcv/steps/tensor_state.hpp"

#include <numeric>

namespace ffcv {

std::uint64_t TensorState::element_count() const {
  return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1}, std::multiplies<>());
}

std::string TensorState::to_string() const {
  std::string text = dtype.typestr() + "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "] " + (device == Device::kCpu ? "cpu" : "cuda");
}

}  // namespace ffcv
