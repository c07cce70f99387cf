#include "ffcv/util/json_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ffcv {

namespace {

// The length of the well-formed UTF-8 sequence at text[at] (a byte of 0x80 or more), or 0 where
// the bytes there are no such sequence (a stray continuation byte, an overlong form, a surrogate,
// a code point past U+10FFFF, a sequence cut short).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t k) {
    return at + k < text.size() ? static_cast<unsigned char>(text[at + k]) : 0;
  };
  const unsigned char lead = byte(0);
  const auto continuation = [&](std::size_t k, unsigned char low = 0x80,
                                unsigned char high = 0xBF) {
    return byte(k) >= low && byte(k) <= high;
  };
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned char low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned char low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t length = utf8_sequence_length(text, i);
      if (length == 0) {
        out += "\\ufffd";  // a byte that is no UTF-8 (a name in another encoding)
      } else {
        out.append(text.substr(i, length));
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value, int decimals) {
  if (!std::isfinite(value)) return "null";
  char text[400];  // %.Nf of the largest double needs 309 digits before the point
  std::snprintf(text, sizeof text, "%.*f", std::clamp(decimals, 0, 30), value);
  std::string out = text;
  if (out.front() == '-' && out.find_first_not_of("0.", 1) == std::string::npos) out.erase(0, 1);
  return out;
}

std::string json_float(double value) {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {  // the shortest text that reads back exactly
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  std::string out = text;
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

std::vector<double> json_numbers(std::string_view json, std::string_view name) {
  std::vector<double> values;
  const std::string needle = "\"" + std::string(name) + "\": ";
  for (std::size_t at = json.find(needle); at != std::string_view::npos;
       at = json.find(needle, at + needle.size())) {
    const std::string number(json.substr(at + needle.size(), 32));
    values.push_back(std::strtod(number.c_str(), nullptr));
  }
  return values;
}

}  // namespace ffcv
