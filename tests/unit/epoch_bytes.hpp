// Batches as plain bytes, to compare two loaders' epochs exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "ffcv/loader.hpp"

namespace ffcv::test {

// Every byte of every output of one batch, output after output (a ragged output's offsets or
// lengths after its values).
inline std::vector<std::uint8_t> batch_bytes(const Batch& batch) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t o = 0; o < batch.num_outputs(); ++o) {
    const BatchTensor t = batch.output(o);
    bytes.insert(bytes.end(), t.data, t.data + t.byte_size());
    const std::int64_t* index = t.offsets ? t.offsets : t.lengths;
    const std::uint64_t words = t.offsets ? t.count + 1 : t.lengths ? t.count : 0;
    const auto* first = reinterpret_cast<const std::uint8_t*>(index);
    if (words > 0) bytes.insert(bytes.end(), first, first + words * sizeof(std::int64_t));
  }
  return bytes;
}

// The bytes of every batch `it` has left.
inline std::vector<std::vector<std::uint8_t>> remaining_batch_bytes(EpochIterator& it) {
  std::vector<std::vector<std::uint8_t>> batches;
  while (auto batch = it.next()) batches.push_back(batch_bytes(*batch));
  return batches;
}

// The bytes of every batch of an epoch, from `first_batch` on.
inline std::vector<std::vector<std::uint8_t>> epoch_bytes(Loader& loader, std::uint64_t epoch,
                                                          std::uint64_t first_batch = 0) {
  EpochIterator it = loader.epoch(epoch, first_batch);
  return remaining_batch_bytes(it);
}

}  // namespace ffcv::test
