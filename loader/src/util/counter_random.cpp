#include "ffcv/util/counter_random.hpp"

namespace ffcv {

std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> counter,
                                        std::array<std::uint32_t, 2> key) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{kMul0} * counter[0];
    const std::uint64_t p1 = std::uint64_t{kMul1} * counter[2];
    counter = {
        static_cast<std::uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<std::uint32_t>(p1),
        static_cast<std::uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<std::uint32_t>(p0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return counter;
}

std::uint64_t random_u64(std::uint64_t seed, std::uint32_t stream, std::uint64_t index,
                         std::uint32_t draw) {
  const auto out = philox4x32(
      {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), draw, stream},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  return (std::uint64_t{out[0]} << 32) | out[1];
}

double uniform01(std::uint64_t seed, std::uint32_t stream, std::uint64_t index,
                 std::uint32_t draw) {
  return static_cast<double>(random_u64(seed, stream, index, draw) >> 11) * 0x1.0p-53;
}

}  // namespace ffcv
