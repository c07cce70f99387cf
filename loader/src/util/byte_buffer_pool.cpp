#include "ffcv/util/byte_buffer_pool.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace ffcv {

std::vector<std::uint8_t> ByteBufferPool::take(std::size_t size) {
  std::vector<std::uint8_t> buffer;
  {
    const std::lock_guard lock(mutex_);
    // The best fit: the smallest storage that holds `size`, so that a small request does not
    // take the large buffer the next large one needs (which would then be allocated and
    // faulted in afresh); among equals, one already `size` long (no fill), then the most
    // recently given (the most likely still in cache).
    std::optional<std::size_t> chosen;
    const auto better = [&](const std::vector<std::uint8_t>& a,
                            const std::vector<std::uint8_t>& b) {
      if (a.capacity() != b.capacity()) return a.capacity() < b.capacity();
      return a.size() >= size && b.size() < size;
    };
    for (std::size_t i = buffers_.size(); i-- > 0;) {
      if (buffers_[i].capacity() < size) continue;
      if (!chosen || better(buffers_[i], buffers_[*chosen])) chosen = i;
    }
    if (chosen) {
      buffer = std::move(buffers_[*chosen]);
      buffers_.erase(buffers_.begin() + static_cast<std::ptrdiff_t>(*chosen));
      held_bytes_ -= buffer.capacity();
    }
  }
  // A held buffer fills only its growth past its old size; with none large enough, `buffer` is
  // a new one and the held ones stay for smaller requests.
  buffer.resize(size);
  return buffer;
}

void ByteBufferPool::give(std::vector<std::uint8_t>&& buffer) {
  if (buffer.capacity() == 0) return;
  std::vector<std::uint8_t> given = std::move(buffer);
  std::vector<std::vector<std::uint8_t>> dropped;  // freed after the lock
  const std::lock_guard lock(mutex_);
  if (given.capacity() > max_bytes_) return;
  // Full: the given buffer takes the place of the smallest held, if it is larger (a small
  // buffer is easily allocated again; a large one is what the pool is for), else it is freed.
  while (buffers_.size() >= max_buffers_ || given.capacity() > max_bytes_ - held_bytes_) {
    const auto smallest =
        std::min_element(buffers_.begin(), buffers_.end(),
                         [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
    if (smallest == buffers_.end() || smallest->capacity() >= given.capacity()) return;
    held_bytes_ -= smallest->capacity();
    dropped.push_back(std::move(*smallest));
    buffers_.erase(smallest);
  }
  held_bytes_ += given.capacity();
  buffers_.push_back(std::move(given));
}

std::size_t ByteBufferPool::held() const {
  const std::lock_guard lock(mutex_);
  return buffers_.size();
}

std::size_t ByteBufferPool::held_bytes() const {
  const std::lock_guard lock(mutex_);
  return held_bytes_;
}

}  // namespace ffcv
