// Internal: typed access to a FieldValue with a clear error when the kind is wrong.
#pragma once

#include <string>
#include <variant>

#include "ffcv/format/value.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

template <typename T>
const T& expect_value(const FieldValue& value, const char* field_type, const char* wanted) {
  if (const T* held = std::get_if<T>(&value)) return *held;
  throw EncodeError(std::string(field_type) + " field expects " + wanted + ", got " +
                    value_kind_name(value));
}

}  // namespace ffcv
