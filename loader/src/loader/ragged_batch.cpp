#include "ragged_batch.hpp"

#include <algorithm>
#include <cstring>

namespace ffcv {

std::uint64_t RaggedBatchView::index_bytes(std::uint64_t batch_size) {
  return ((batch_size + 2) * sizeof(std::int64_t) + 63) / 64 * 64;
}

std::uint64_t RaggedBatchView::block_bytes(std::uint64_t batch_size, std::uint64_t capacity_rows,
                                           std::uint64_t row_bytes) {
  return index_bytes(batch_size) + capacity_rows * row_bytes;
}

RaggedBatchView RaggedBatchView::over(RaggedLayout layout, std::uint8_t* block,
                                      std::uint64_t batch_size, std::uint64_t row_bytes) {
  return {layout, reinterpret_cast<std::int64_t*>(block), block + index_bytes(batch_size),
          row_bytes};
}

std::uint64_t RaggedBatchView::sample_rows(std::uint64_t position) const {
  const std::int64_t* words = index + 1;
  if (layout == RaggedLayout::kPacked) {
    return static_cast<std::uint64_t>(words[position + 1] - words[position]);
  }
  return static_cast<std::uint64_t>(words[position]);
}

std::uint8_t* RaggedBatchView::sample_values(std::uint64_t position) const {
  const std::uint64_t first_row = layout == RaggedLayout::kPacked
                                      ? static_cast<std::uint64_t>(index[1 + position])
                                      : position * rows_word();
  return values + first_row * row_bytes;
}

void RaggedBatchView::drop_samples(std::uint64_t count, std::span<const std::uint64_t> failed) {
  std::int64_t* words = index + 1;
  const auto is_failed = [&](std::uint64_t position) {
    return std::binary_search(failed.begin(), failed.end(), position);
  };
  std::uint64_t kept = 0;
  if (layout == RaggedLayout::kPacked) {
    // Offsets are rewritten in place: word kept + 1 <= position + 1 is written only after
    // position's own end offset was read, so no offset is overwritten before it is read.
    std::int64_t start = words[0];
    for (std::uint64_t position = 0; position < count; ++position) {
      const std::int64_t end = words[position + 1];
      if (!is_failed(position)) {
        const std::int64_t rows = end - start;
        const std::int64_t to = words[kept];
        if (to != start) {
          std::memmove(values + to * row_bytes, values + start * row_bytes, rows * row_bytes);
        }
        words[kept + 1] = to + rows;
        ++kept;
      }
      start = end;
    }
    index[0] = words[kept];
    return;
  }
  const std::uint64_t old_stride = rows_word();
  std::uint64_t stride = 0;
  for (std::uint64_t position = 0; position < count; ++position) {
    if (!is_failed(position)) stride = std::max<std::uint64_t>(stride, words[position]);
  }
  // Each kept block moves to an earlier or equal place with a stride no larger, and the rows past
  // its sample's own are zeros already (the loader zeroes each block's tail).
  for (std::uint64_t position = 0; position < count; ++position) {
    if (is_failed(position)) continue;
    std::memmove(values + kept * stride * row_bytes, values + position * old_stride * row_bytes,
                 stride * row_bytes);
    words[kept] = words[position];
    ++kept;
  }
  index[0] = static_cast<std::int64_t>(stride);
}

std::uint64_t ragged_rows_needed(RaggedLayout layout, std::uint64_t count, std::uint64_t sum,
                                 std::uint64_t largest) {
  return layout == RaggedLayout::kPacked ? sum : count * largest;
}

}  // namespace ffcv
