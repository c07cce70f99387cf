#include "ffcv/steps/operation.hpp"

namespace ffcv {

std::array<std::uint32_t, 2> SampleContext::make_epoch_key(std::uint64_t seed,
                                                           std::uint64_t epoch) {
  constexpr std::uint32_t kEpochKeyTag = 0x65706f63;  // "epoc"
  const auto words = philox4x32(
      {static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(epoch >> 32), 0, kEpochKeyTag},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  return {words[0], words[1]};
}

std::uint64_t SampleContext::random_u64(std::uint32_t n) const {
  const auto words = philox4x32(
      {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), n, stream},
      epoch_key);
  return (std::uint64_t{words[0]} << 32) | words[1];
}

double SampleContext::uniform(std::uint32_t n) const {
  return static_cast<double>(random_u64(n) >> 11) * 0x1.0p-53;
}

double BatchContext::uniform(std::uint32_t group, std::uint32_t n) const {
  // A domain of counters apart from the per-sample ones (their 4th word is a step's stream).
  constexpr std::uint32_t kBatchTag = 0x62617463;  // "batc"
  const auto words = philox4x32({static_cast<std::uint32_t>(batch),
                                 static_cast<std::uint32_t>(batch >> 32) ^ kBatchTag, n, group},
                                {epoch_key[0] ^ kBatchTag, epoch_key[1]});
  const std::uint64_t bits = (std::uint64_t{words[0]} << 32) | words[1];
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace ffcv
