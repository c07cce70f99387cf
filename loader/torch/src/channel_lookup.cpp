// The host per-channel lookup (channel_lookup.hpp): the channel is counted along, not computed
// with a division per element.
#include "channel_lookup.hpp"

namespace ffcv::torch_adapter::detail {
namespace {

template <typename Entry>
void lookup(const std::uint8_t* in, Entry* out, const Entry* table, std::uint64_t begin,
            std::uint64_t end, int channels) {
  std::uint64_t i = begin;
  int c = static_cast<int>(begin % channels);
  for (; i < end; ++i) {
    out[i] = table[c * 256 + in[i]];
    if (++c == channels) c = 0;
  }
}

}  // namespace

void channel_lookup_host(const std::uint8_t* in, void* out, const void* table, std::uint64_t begin,
                         std::uint64_t end, int channels, int entry_bytes) {
  if (entry_bytes == 4) {
    lookup(in, static_cast<std::uint32_t*>(out), static_cast<const std::uint32_t*>(table), begin,
           end, channels);
  } else {
    lookup(in, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(table), begin,
           end, channels);
  }
}

}  // namespace ffcv::torch_adapter::detail
