// IntField (type id 1) and FloatField (type id 0): one int64 / float64 per sample, stored in the
// metadata column itself, no heap data.
#pragma once

#include "ffcv/field.hpp"

namespace ffcv {

class IntField final : public Field {
 public:
  static constexpr std::uint8_t kTypeId = 1;
  std::uint8_t type_id() const override { return kTypeId; }
  std::string type_name() const override { return "Int"; }
  ColumnType column_type() const override { return {8, 8}; }
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
  std::string describe(const std::uint8_t* column) const override;
};

class FloatField final : public Field {
 public:
  static constexpr std::uint8_t kTypeId = 0;
  std::uint8_t type_id() const override { return kTypeId; }
  std::string type_name() const override { return "Float"; }
  ColumnType column_type() const override { return {8, 8}; }
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
  std::string describe(const std::uint8_t* column) const override;
};

}  // namespace ffcv
