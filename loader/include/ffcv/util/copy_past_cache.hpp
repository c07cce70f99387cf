// A copy into memory that is written out and not read again (a page on its way to the disk):
// from 64 KB on, with streaming stores, which write past the cache instead of first reading each
// destination line into it, and so neither spend that read nor evict what other threads work
// on. Smaller copies, and machines without SSE2, use memcpy. The bytes are those of memcpy; the
// copy's stores are complete (fenced) when it returns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ffcv {

void copy_past_cache(std::uint8_t* destination, const std::uint8_t* source, std::size_t size);

}  // namespace ffcv
