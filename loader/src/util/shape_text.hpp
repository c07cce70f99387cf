// Internal: an array shape as numpy prints it ("[3, 32, 32]"), for the array fields' messages
// and their header JSON, and for a pipeline stage's tensor description.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ffcv {

inline std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace ffcv
