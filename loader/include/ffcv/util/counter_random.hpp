// Counter-based random numbers (Philox-4x32-10).
//
// A value is a pure function of (key, counter): no hidden state, so any thread can draw the
// numbers that belong to a given sample and get the same result regardless of scheduling.
// Callers key by (seed, stream) and count by (sample, draw), e.g. the writer's 'proportion'
// decision for sample i is uniform01(seed, kProportionStream, i, 0).
#pragma once

#include <array>
#include <cstdint>

namespace ffcv {

// The four 32-bit outputs of Philox-4x32 with 10 rounds.
std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> counter,
                                        std::array<std::uint32_t, 2> key);

// A 64-bit random value for (seed, stream, index, draw).
std::uint64_t random_u64(std::uint64_t seed, std::uint32_t stream, std::uint64_t index,
                         std::uint32_t draw);

// A double uniform in [0, 1) with 53 random bits, for (seed, stream, index, draw).
double uniform01(std::uint64_t seed, std::uint32_t stream, std::uint64_t index, std::uint32_t draw);

}  // namespace ffcv
