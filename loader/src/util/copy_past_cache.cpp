#include "ffcv/util/copy_past_cache.hpp"

#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ffcv {

void copy_past_cache(std::uint8_t* destination, const std::uint8_t* source, std::size_t size) {
#if defined(__SSE2__)
  constexpr std::size_t kStreamFrom = 64 * 1024;
  if (size >= kStreamFrom) {
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(destination) % 16) % 16;
    std::memcpy(destination, source, head);
    std::size_t done = head;
    for (; done + 64 <= size; done += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + done));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + done + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + done + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + done + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(destination + done), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(destination + done + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(destination + done + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(destination + done + 48), d);
    }
    std::memcpy(destination + done, source + done, size - done);
    _mm_sfence();  // the streamed stores complete before another thread is told of them
    return;
  }
#endif
  std::memcpy(destination, source, size);
}

}  // namespace ffcv
