#include "ffcv/byte_size.hpp"

#include <cstdio>

namespace ffcv {

std::string byte_size_text(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit > 0 ? "%.1f %s" : "%.0f %s", bytes, kUnits[unit]);
  return text;
}

std::string exact_byte_size_text(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

std::string bytes_and_size_text(std::uint64_t bytes) {
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes < 1024) return text;
  return text + " (" + byte_size_text(static_cast<double>(bytes)) + ")";
}

}  // namespace ffcv
