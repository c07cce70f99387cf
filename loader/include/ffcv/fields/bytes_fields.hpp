// BytesField (type id 3) and JSONField (type id 5): a variable-length payload on the heap, with
// (ptr u64, size u64) in a packed 16-byte metadata column.
//
// JSON values are stored as FFCV does: the UTF-8 text followed by one NUL byte, which counts in
// the size. Empty byte strings are refused: FFCV's reader cannot tell a zero-size allocation from
// its neighbour (the allocation table lookup is by pointer).
#pragma once

#include "ffcv/field.hpp"

namespace ffcv {

class BytesField : public Field {
 public:
  static constexpr std::uint8_t kTypeId = 3;
  std::uint8_t type_id() const override { return kTypeId; }
  std::string type_name() const override { return "Bytes"; }
  ColumnType column_type() const override { return {16, 1}; }
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  std::vector<HeapRef> heap_refs(const std::uint8_t* column) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
  std::string describe(const std::uint8_t* column) const override;

 protected:
  void encode_payload(const std::uint8_t* data, std::size_t size, std::uint8_t* column,
                      std::vector<EncodedAllocation>& heap) const;
};

class JsonField final : public BytesField {
 public:
  static constexpr std::uint8_t kTypeId = 5;
  std::uint8_t type_id() const override { return kTypeId; }
  std::string type_name() const override { return "JSON"; }
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
};

}  // namespace ffcv
