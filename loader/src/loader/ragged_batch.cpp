#include "ragged_batch.hpp"

#include <algorithm>
#include <cstring>

namespace ffcv {

std::uint64_t RaggedBatchView::index_bytes(std::uint64_t batch_size) {
  return ((2 * batch_size + 2) * sizeof(std::int64_t) + 63) / 64 * 64;
}

std::uint64_t RaggedBatchView::block_bytes(std::uint64_t batch_size, std::uint64_t capacity_rows,
                                           std::uint64_t row_bytes) {
  return index_bytes(batch_size) + capacity_rows * row_bytes;
}

RaggedBatchView RaggedBatchView::over(RaggedLayout layout, std::uint8_t* block,
                                      std::uint64_t batch_size, std::uint64_t row_bytes) {
  auto* index = reinterpret_cast<std::int64_t*>(block);
  return {layout, index, index + batch_size + 2, block + index_bytes(batch_size), row_bytes};
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

void RaggedBatchView::settle(std::uint64_t count, std::span<const std::uint64_t> failed) {
  std::int64_t* words = index + 1;
  const auto is_failed = [&](std::uint64_t position) {
    return std::binary_search(failed.begin(), failed.end(), position);
  };
  std::uint64_t placed = 0;
  if (layout == RaggedLayout::kPacked) {
    // Offsets are rewritten in place: word placed + 1 <= position + 1 is written only after
    // position's own end offset was read, so no offset is overwritten before it is read.
    std::int64_t start = words[0];
    for (std::uint64_t position = 0; position < count; ++position) {
      const std::int64_t end = words[position + 1];
      if (!is_failed(position)) {
        const std::int64_t rows = kept[position];
        const std::int64_t to = words[placed];
        if (to != start && rows > 0) {
          std::memmove(values + to * row_bytes, values + start * row_bytes, rows * row_bytes);
        }
        words[placed + 1] = to + rows;
        ++placed;
      }
      start = end;
    }
    index[0] = words[placed];
    return;
  }
  const std::uint64_t old_stride = rows_word();
  std::uint64_t stride = 0;
  for (std::uint64_t position = 0; position < count; ++position) {
    if (!is_failed(position)) stride = std::max<std::uint64_t>(stride, kept[position]);
  }
  // Each kept block moves to an earlier or equal place with a stride no larger: its rows first,
  // then zeros up to the new stride, before any later block's rows are read.
  for (std::uint64_t position = 0; position < count; ++position) {
    if (is_failed(position)) continue;
    const auto rows = static_cast<std::uint64_t>(kept[position]);
    std::uint8_t* to = values + placed * stride * row_bytes;
    std::memmove(to, values + position * old_stride * row_bytes, rows * row_bytes);
    std::memset(to + rows * row_bytes, 0, (stride - rows) * row_bytes);
    words[placed] = static_cast<std::int64_t>(rows);
    ++placed;
  }
  index[0] = static_cast<std::int64_t>(stride);
}

std::uint64_t keep_rows(std::uint8_t* rows, std::uint64_t count, std::uint64_t row_bytes,
                        const std::uint8_t* kept) {
  std::uint64_t out = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!kept[i]) continue;
    if (out != i) std::memmove(rows + out * row_bytes, rows + i * row_bytes, row_bytes);
    ++out;
  }
  return out;
}

std::uint64_t ragged_rows_needed(RaggedLayout layout, std::uint64_t count, std::uint64_t sum,
                                 std::uint64_t largest) {
  return layout == RaggedLayout::kPacked ? sum : count * largest;
}

}  // namespace ffcv
