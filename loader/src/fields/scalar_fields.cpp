#include "ffcv/fields/scalar_fields.hpp"

#include <cmath>
#include <cstdio>

#include "ffcv/util/json_text.hpp"
#include "ffcv/util/little_endian.hpp"
#include "value_access.hpp"

namespace ffcv {

void IntField::encode(const FieldValue& value, std::uint8_t* column,
                      std::vector<EncodedAllocation>&, const EncodeContext&) const {
  store_le(column, expect_value<std::int64_t>(value, "Int", "an int"));
}

FieldValue IntField::decode(const std::uint8_t* column, const PayloadReader&) const {
  return load_le<std::int64_t>(column);
}

std::string IntField::describe(const std::uint8_t* column) const {
  return "{\"value\": " + std::to_string(load_le<std::int64_t>(column)) + "}";
}

void FloatField::encode(const FieldValue& value, std::uint8_t* column,
                        std::vector<EncodedAllocation>&, const EncodeContext&) const {
  // Integers are accepted too and stored as their float64 value, as numpy assignment does.
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    store_le(column, static_cast<double>(*integer));
    return;
  }
  store_le(column, expect_value<double>(value, "Float", "a float"));
}

FieldValue FloatField::decode(const std::uint8_t* column, const PayloadReader&) const {
  return load_le<double>(column);
}

std::string FloatField::describe(const std::uint8_t* column) const {
  return "{\"value\": " + json_float(load_le<double>(column)) + "}";
}

}  // namespace ffcv
