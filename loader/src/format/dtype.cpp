#include "ffcv/format/dtype.hpp"

#include <map>
#include <vector>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

bool valid_size(char kind, std::size_t size) {
  switch (kind) {
    case 'b':
      return size == 1;
    case 'i':
    case 'u':
      return size == 1 || size == 2 || size == 4 || size == 8;
    case 'f':
      return size == 2 || size == 4 || size == 8;
    case 'c':
      return size == 8 || size == 16;
    default:
      return false;
  }
}

}  // namespace

DType DType::parse(std::string_view text) {
  static const std::map<std::string_view, std::string_view> kNames = {
      {"bool", "|b1"},      {"uint8", "|u1"},      {"int8", "|i1"},    {"uint16", "<u2"},
      {"int16", "<i2"},     {"uint32", "<u4"},     {"int32", "<i4"},   {"uint64", "<u8"},
      {"int64", "<i8"},     {"float16", "<f2"},    {"float32", "<f4"}, {"float64", "<f8"},
      {"complex64", "<c8"}, {"complex128", "<c16"}};
  if (auto it = kNames.find(text); it != kNames.end()) text = it->second;
  const std::string original(text);
  if (text.size() < 3) throw ConfigError("unsupported dtype '" + original + "'");
  DType dtype;
  dtype.byte_order = text[0] == '=' ? '<' : text[0];
  dtype.kind = text[1];
  std::size_t size = 0;
  for (char c : text.substr(2)) {
    if (c < '0' || c > '9') throw ConfigError("unsupported dtype '" + original + "'");
    size = size * 10 + static_cast<std::size_t>(c - '0');
    if (size > 64) throw ConfigError("unsupported dtype '" + original + "'");
  }
  dtype.itemsize = size;
  if ((dtype.byte_order != '<' && dtype.byte_order != '>' && dtype.byte_order != '|') ||
      !valid_size(dtype.kind, size)) {
    throw ConfigError("unsupported dtype '" + original +
                      "' (expected a numpy typestr such as <f4, |u1, <i8)");
  }
  if (size == 1) dtype.byte_order = '|';
  return dtype;
}

std::string DType::typestr() const {
  return std::string(1, byte_order) + kind + std::to_string(itemsize);
}

std::string DType::descr_json() const { return "[[\"\", \"" + typestr() + "\"]]"; }

DType DType::from_descr_json(std::string_view json) {
  // Accepts the shape json.dumps gives a one-entry descr: [["<name>", "<typestr>"]], with any
  // whitespace. Structured dtypes (more than one entry) are refused, as FFCV refuses them.
  std::vector<std::string> strings;
  int depth = 0;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (c == '"') {
      const std::size_t end = json.find('"', i + 1);
      if (end == std::string_view::npos) break;
      strings.emplace_back(json.substr(i + 1, end - i - 1));
      i = end;
    } else if (c != ',' && c != ' ' && c != '\n' && c != '\t') {
      throw ConfigError("malformed dtype description '" + std::string(json) + "'");
    }
  }
  if (depth != 0 || strings.size() != 2) {
    throw ConfigError("dtype description '" + std::string(json) +
                      "' must hold exactly one (name, typestr) entry");
  }
  return parse(strings[1]);
}

}  // namespace ffcv
