// Byte buffers handed back for reuse, so that a stream of large, short-lived buffers (the
// writer's decoded images and payloads, hundreds of KB each) reuses memory already mapped and
// in cache instead of asking the allocator for fresh pages each time: glibc returns the memory
// of freed large blocks to the kernel, and the next block's first touch of each 4 KiB page then
// faults and is zero-filled (measured: a fifth of the writer's CPU time in raw mode).
//
// take(size) gives a buffer of exactly `size` bytes whose contents are unspecified (a reused
// buffer keeps old bytes; only growth past its previous size is zero-filled, as
// std::vector::resize does). give() hands a buffer back; the pool keeps at most `max_buffers`
// buffers and `max_bytes` bytes of storage: when full, a given buffer takes the place of the
// smallest ones held if it is larger than they are, and is freed otherwise. Any thread may take and
// give (one mutex); the pool must outlive the buffers' users only in the sense that a buffer given
// after the pool is gone is simply freed by its owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace ffcv {

class ByteBufferPool {
 public:
  explicit ByteBufferPool(std::size_t max_buffers,
                          std::size_t max_bytes = std::numeric_limits<std::size_t>::max())
      : max_buffers_(max_buffers), max_bytes_(max_bytes) {}
  ByteBufferPool(const ByteBufferPool&) = delete;
  ByteBufferPool& operator=(const ByteBufferPool&) = delete;

  // A buffer of `size` bytes: of those held whose storage holds `size`, the smallest (one that
  // long already, then the most recently given, among equals); else a new one, the held ones
  // kept for smaller requests.
  std::vector<std::uint8_t> take(std::size_t size);
  // Hands `buffer` back for a later take; freed when the pool is full or it holds nothing.
  void give(std::vector<std::uint8_t>&& buffer);

  std::size_t held() const;
  std::size_t held_bytes() const;  // the storage of the buffers held

 private:
  const std::size_t max_buffers_, max_bytes_;
  mutable std::mutex mutex_;
  std::vector<std::vector<std::uint8_t>> buffers_;  // the last given at the back
  std::size_t held_bytes_ = 0;
};

// `pool`'s take, or a new buffer when there is no pool.
inline std::vector<std::uint8_t> take_buffer(ByteBufferPool* pool, std::size_t size) {
  if (pool == nullptr) return std::vector<std::uint8_t>(size);
  return pool->take(size);
}

// `pool`'s give; without a pool the buffer is freed.
inline void give_buffer(ByteBufferPool* pool, std::vector<std::uint8_t>&& buffer) {
  if (pool != nullptr) pool->give(std::move(buffer));
}

}  // namespace ffcv
