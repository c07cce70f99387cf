// Numpy-style element types ("<f4", "|u1", ">i8", ...) as NDArray fields store them.
//
// FFCV keeps an NDArray field's dtype as the JSON of numpy's `dtype.descr`, e.g. [["", "<f4"]],
// inside the field's argument blob. DType parses and prints the typestr part of that JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ffcv {

struct DType {
  char byte_order = '<';  // '<' little, '>' big, '|' not applicable (1-byte types)
  char kind = 'u';        // 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex
  std::size_t itemsize = 1;

  // Parses "<f4", "|u1", "=i8", "float32", "uint8", "int64", "bool", ... ('=' becomes '<').
  // Throws ConfigError on anything else.
  static DType parse(std::string_view text);

  // The numpy typestr, e.g. "<f4" or "|u1".
  std::string typestr() const;

  // The JSON FFCV writes for `dtype.descr`: [["", "<f4"]].
  std::string descr_json() const;

  // Parses the JSON of `dtype.descr`; exactly one unnamed-or-named entry is accepted.
  static DType from_descr_json(std::string_view json);

  bool operator==(const DType&) const = default;
};

}  // namespace ffcv
