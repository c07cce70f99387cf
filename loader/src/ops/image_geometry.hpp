// Internal: checks shared by image operations.
#pragma once

#include <string>
#include <vector>

#include "ffcv/steps/tensor_state.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

// Throws ConfigError unless `state` is an (H, W, C) uint8 image.
inline void require_u8_image(const TensorState& state, const std::string& op) {
  if (state.shape.size() != 3 || state.dtype.kind != 'u' || state.dtype.itemsize != 1) {
    throw ConfigError(op + " needs an (H, W, C) uint8 image, got " + state.to_string());
  }
}

// A fill colour for an image of `channels` channels: zeros when none was given; ConfigError
// unless it has one value per channel.
inline std::vector<double> resolve_fill(std::vector<double> fill, std::uint64_t channels,
                                        const std::string& op) {
  if (fill.empty()) fill.assign(channels, 0.0);
  if (fill.size() != channels) {
    throw ConfigError(op + ": fill needs one value per channel (" + std::to_string(channels) + ")");
  }
  return fill;
}

// Uniform integer in [0, bound) from a uniform double in [0, 1).
inline std::uint64_t uniform_index(double u, std::uint64_t bound) {
  const auto value = static_cast<std::uint64_t>(u * static_cast<double>(bound));
  return value < bound ? value : bound - 1;
}

}  // namespace ffcv
