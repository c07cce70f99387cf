#include "ffcv/util/byte_buffer_pool.hpp"

#include <optional>
#include <utility>

namespace ffcv {

std::vector<std::uint8_t> ByteBufferPool::take(std::size_t size) {
  std::vector<std::uint8_t> buffer;
  {
    const std::lock_guard lock(mutex_);
    // The last given that is already `size` long or more (no fill), else the last given whose
    // storage holds `size` (fills only the growth), else the largest.
    std::optional<std::size_t> long_enough, roomy;
    std::size_t largest = 0;
    for (std::size_t i = buffers_.size(); i-- > 0 && !long_enough;) {
      if (buffers_[i].size() >= size) long_enough = i;
      if (!roomy && buffers_[i].capacity() >= size) roomy = i;
      if (buffers_[i].capacity() > buffers_[largest].capacity()) largest = i;
    }
    if (!buffers_.empty()) {
      const std::size_t chosen = long_enough.value_or(roomy.value_or(largest));
      buffer = std::move(buffers_[chosen]);
      buffers_.erase(buffers_.begin() + static_cast<std::ptrdiff_t>(chosen));
      held_bytes_ -= buffer.capacity();
    }
  }
  if (buffer.capacity() < size) buffer.clear();  // grown afresh: the old bytes are not copied
  buffer.resize(size);
  return buffer;
}

void ByteBufferPool::give(std::vector<std::uint8_t>&& buffer) {
  if (buffer.capacity() == 0) return;
  std::vector<std::uint8_t> given = std::move(buffer);
  const std::lock_guard lock(mutex_);
  if (buffers_.size() >= max_buffers_ || given.capacity() > max_bytes_ - held_bytes_) return;
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
