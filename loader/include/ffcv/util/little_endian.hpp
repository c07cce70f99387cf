// Little-endian loads and stores of fixed-width integers and floats.
//
// Every integer in a .beton file is little-endian (FFCV pins its numpy dtypes with '<'). Going
// through these helpers instead of casting pointers keeps the code correct on any host and free
// of unaligned accesses: metadata records are packed and often start at odd offsets.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ffcv {

template <typename T>
T load_le(const std::uint8_t* bytes) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    auto* p = reinterpret_cast<std::uint8_t*>(&value);
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(p[i], p[sizeof(T) - 1 - i]);
  }
  return value;
}

template <typename T>
void store_le(std::uint8_t* bytes, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    auto* p = reinterpret_cast<std::uint8_t*>(&value);
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(p[i], p[sizeof(T) - 1 - i]);
  }
  std::memcpy(bytes, &value, sizeof(T));
}

}  // namespace ffcv
