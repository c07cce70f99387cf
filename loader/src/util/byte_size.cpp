#include "ffcv/util/byte_size.hpp"

#include <cctype>
#include <charconv>
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

namespace {

// The binary shift of a size's suffix (after `digits` digits), or -1 when the text is not
// digits with one of the suffixes.
int size_shift(std::string_view text, std::size_t& digits) {
  digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string_view suffix = text.substr(digits);
  if (suffix.size() > 1 && (suffix.ends_with("iB") || suffix.ends_with("B"))) {
    suffix = suffix.substr(0, 1);
  }
  if (digits == 0) return -1;
  if (suffix.empty()) return 0;
  if (suffix == "K" || suffix == "k") return 10;
  if (suffix == "M") return 20;
  if (suffix == "G") return 30;
  if (suffix == "T") return 40;
  return -1;
}

}  // namespace

bool is_byte_size_text(std::string_view text) {
  std::size_t digits = 0;
  return size_shift(text, digits) >= 0;
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::size_t digits = 0;
  const int shift = size_shift(text, digits);
  if (shift < 0) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, value);
  if (error != std::errc() || value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

}  // namespace ffcv
