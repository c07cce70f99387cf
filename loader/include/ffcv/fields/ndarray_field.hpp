// NDArrayField (type id 4; FFCV's TorchTensorField, type id 6, reads back as this too): a
// fixed-dtype, fixed-shape array per sample, its bytes on the heap and a u64 pointer in the
// metadata column.
//
// The argument blob holds the shape (32 x u64, unused entries 0) and the dtype as the JSON of
// numpy's `dtype.descr`. Shapes must be non-empty, have at most 32 dimensions and no zero
// dimension (FFCV drops trailing zeros when it reads a shape back, and cannot locate zero-size
// data).
#pragma once

#include "ffcv/field.hpp"

namespace ffcv {

class NdArrayField final : public Field {
 public:
  static constexpr std::uint8_t kTypeId = 4;
  static constexpr std::uint8_t kTorchTensorTypeId = 6;
  static constexpr std::size_t kMaxDims = 32;

  // Throws ConfigError for a shape FFCV cannot represent.
  NdArrayField(DType dtype, std::vector<std::uint64_t> shape, std::uint8_t type_id = kTypeId);
  // Parses an argument blob (of type id 4 or 6). Throws std::runtime_error on a bad blob.
  static NdArrayField from_args(const FieldArgs& args, std::uint8_t type_id = kTypeId);

  const DType& dtype() const { return dtype_; }
  const std::vector<std::uint64_t>& shape() const { return shape_; }
  std::uint64_t element_bytes() const;

  std::uint8_t type_id() const override { return type_id_; }
  std::string type_name() const override;
  ColumnType column_type() const override { return {8, 8}; }
  FieldArgs args() const override;
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  std::vector<HeapRef> heap_refs(const std::uint8_t* column) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
  std::string describe(const std::uint8_t* column) const override;

 private:
  DType dtype_;
  std::vector<std::uint64_t> shape_;
  std::uint8_t type_id_;
};

}  // namespace ffcv
