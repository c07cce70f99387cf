// FNV-1a, 64 bits: a stable hash of bytes, for names and digests that must come out the same on
// every run and machine (a sweep cell's folder, a model's weights). Not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace ffcv {

class Fnv1a {
 public:
  void add(const void* bytes, std::size_t size) {
    const auto* data = static_cast<const unsigned char*>(bytes);
    for (std::size_t k = 0; k < size; ++k) hash_ = (hash_ ^ data[k]) * 1099511628211ull;
  }
  void add(std::string_view text) { add(text.data(), text.size()); }

  std::uint64_t value() const { return hash_; }
  // 16 lower-case hex digits.
  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
    return text;
  }

 private:
  std::uint64_t hash_ = 14695981039346656037ull;
};

}  // namespace ffcv
