#include "ffcv/util/json_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ffcv {

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
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
