// Internal: the batch memory of a ragged output, and the work on it.
//
// One batch of a ragged output is one block of memory: index words (int64), padded to 64 bytes,
// then the values.
//   word 0      packed: the rows of the whole batch; padded: the rows of each sample's block
//               (those of the batch's largest sample)
//   words 1...  packed: count + 1 row offsets (0 first); padded: count lengths
//   words batch_size + 2...  the rows each sample kept (rows that follow an image may drop some)
// The index is written from the samples' metadata when the batch is prepared, before any sample
// is decoded, so each worker knows where its sample's rows go. The block lives and travels with
// the batch (a held batch keeps it), so a lease reads its own index.
#pragma once

#include <cstdint>
#include <span>

#include "ffcv/steps/operation.hpp"

namespace ffcv {

struct RaggedBatchView {
  RaggedLayout layout = RaggedLayout::kPacked;
  std::int64_t* index = nullptr;
  std::int64_t* kept = nullptr;  // the rows each sample kept (index + batch_size + 2)
  std::uint8_t* values = nullptr;
  std::uint64_t row_bytes = 0;

  // The bytes before the values in a batch of up to `batch_size` samples.
  static std::uint64_t index_bytes(std::uint64_t batch_size);
  // The bytes a batch block needs for `capacity_rows` rows of `row_bytes`.
  static std::uint64_t block_bytes(std::uint64_t batch_size, std::uint64_t capacity_rows,
                                   std::uint64_t row_bytes);
  static RaggedBatchView over(RaggedLayout layout, std::uint8_t* block, std::uint64_t batch_size,
                              std::uint64_t row_bytes);

  // Word 0: the batch's rows (packed) or the rows per sample block (padded).
  std::uint64_t rows_word() const { return static_cast<std::uint64_t>(index[0]); }
  std::uint64_t sample_rows(std::uint64_t position) const;
  // Where sample `position`'s rows go; padded blocks hold rows_word() rows.
  std::uint8_t* sample_values(std::uint64_t position) const;

  // Sample `position` kept its first `rows` rows (at most its own).
  void set_kept(std::uint64_t position, std::uint64_t rows) const {
    kept[position] = static_cast<std::int64_t>(rows);
  }

  // Writes the index of `count` samples whose rows are rows_of(position), each keeping all.
  template <typename RowsOf>
  void write_index(std::uint64_t count, const RowsOf& rows_of) {
    std::int64_t* words = index + 1;
    index[0] = 0;
    if (layout == RaggedLayout::kPacked) words[0] = 0;
    for (std::uint64_t position = 0; position < count; ++position) {
      const auto rows = static_cast<std::int64_t>(rows_of(position));
      kept[position] = rows;
      if (layout == RaggedLayout::kPacked) {
        words[position + 1] = words[position] + rows;
        index[0] = words[position + 1];
      } else {
        words[position] = rows;
        if (rows > index[0]) index[0] = rows;
      }
    }
  }

  // Makes the batch what its samples kept: leaves out the samples at `failed` (sorted positions
  // among `count`) and each other sample's rows past those it kept (set_kept); the rest move
  // down in order and the index is rewritten for them (padded blocks shrink to the largest
  // sample kept, their tails zeroed).
  void settle(std::uint64_t count, std::span<const std::uint64_t> failed);
};

// Keeps row i of `count` rows of `row_bytes` where kept[i] is 1, moving them first in order;
// returns how many were kept.
std::uint64_t keep_rows(std::uint8_t* rows, std::uint64_t count, std::uint64_t row_bytes,
                        const std::uint8_t* kept);

// The rows a batch of samples needs: their sum (packed), or count x the largest (padded).
std::uint64_t ragged_rows_needed(RaggedLayout layout, std::uint64_t count, std::uint64_t sum,
                                 std::uint64_t largest);

}  // namespace ffcv
