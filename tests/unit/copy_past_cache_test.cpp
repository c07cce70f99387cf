// copy_past_cache (ffcv/util/copy_past_cache.hpp): the bytes of memcpy, below and above the size
// where it switches to streaming stores, at every alignment of source and destination, and
// nothing written outside the destination.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "ffcv/util/copy_past_cache.hpp"

using namespace ffcv;

TEST_CASE("copy_past_cache gives memcpy's bytes at every size and alignment", "[copy]") {
  std::vector<std::uint8_t> source(300000);
  for (std::size_t i = 0; i < source.size(); ++i) {
    source[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
  }
  constexpr std::uint8_t kGuard = 0xA5;
  for (const std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{65535}, std::size_t{65536},
        std::size_t{65537}, std::size_t{65536 + 63}, std::size_t{200003}}) {
    for (std::size_t destination_offset = 0; destination_offset < 17; ++destination_offset) {
      const std::size_t source_offset = (destination_offset * 7) % 19;
      INFO("size " << size << ", destination offset " << destination_offset << ", source offset "
                   << source_offset);
      std::vector<std::uint8_t> target(size + 64, kGuard);
      copy_past_cache(target.data() + destination_offset, source.data() + source_offset, size);
      CHECK(std::memcmp(target.data() + destination_offset, source.data() + source_offset, size) ==
            0);
      bool guards_intact = true;
      for (std::size_t i = 0; i < destination_offset; ++i) guards_intact &= target[i] == kGuard;
      for (std::size_t i = destination_offset + size; i < target.size(); ++i) {
        guards_intact &= target[i] == kGuard;
      }
      CHECK(guards_intact);
    }
  }
}
