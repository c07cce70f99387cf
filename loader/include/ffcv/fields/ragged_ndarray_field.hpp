// RaggedNDArrayField: a variable number of rows per sample, each row of one fixed dtype and
// inner shape (boxes: rows of float32 [4]; labels: rows of int64 []; polygons, token ids). FFCV
// stores one shape per field; this is the field it lacks.
//
// On disk it is a custom field (type id 255, as Python FFCV names any field it does not know),
// so Python FFCV reads the file through `custom_fields={name: RaggedNDArrayField}` with the
// class `ffcv_cpp.python_ffcv` ships. Layout (docs/format.md, "RaggedNDArray"):
//   metadata column, 16 bytes packed: ptr u64, rows u64. A sample with rows = 0 has no heap
//     payload and ptr 0; otherwise the payload holds exactly rows x row bytes, C order.
//   argument blob: "RaggedNDArray" NUL-padded to 16 bytes, u32 version (1), u32 inner rank
//     (0..16), 16 x u64 inner extents (unused ones 0), the dtype's numpy typestr ("<f4") NUL-
//     padded to 16 bytes, zeros after.
// A sample's rows sit in its metadata, so a loader sizes each batch from the metadata alone,
// before reading or decoding anything (decoders.hpp: the "ragged" decoder).
#pragma once

#include "ffcv/field.hpp"

namespace ffcv {

class RaggedNdArrayField final : public Field {
 public:
  static constexpr std::uint8_t kTypeId = 255;  // FFCV's custom field id
  static constexpr std::size_t kMaxInnerDims = 16;
  static constexpr std::uint32_t kVersion = 1;

  // Throws ConfigError for a zero inner extent, more than 16 inner dimensions or a row whose
  // byte count overflows.
  RaggedNdArrayField(DType dtype, std::vector<std::uint64_t> inner_shape);
  // Whether a type-255 argument blob is this field's (starts with its magic).
  static bool recognizes(const FieldArgs& args);
  // Parses the argument blob. Throws ConfigError naming what is wrong.
  static RaggedNdArrayField from_args(const FieldArgs& args);

  const DType& dtype() const { return dtype_; }
  const std::vector<std::uint64_t>& inner_shape() const { return inner_shape_; }
  std::uint64_t row_bytes() const { return row_bytes_; }
  // "<f4 [4]": a row's dtype and shape, for messages and reports.
  std::string row_text() const;
  // The rows of the sample whose column this is (the column was checked by the reader).
  static std::uint64_t rows(const std::uint8_t* column);
  static std::uint64_t pointer(const std::uint8_t* column);

  std::uint8_t type_id() const override { return kTypeId; }
  std::string type_name() const override { return "RaggedNDArray"; }
  ColumnType column_type() const override { return {16, 1}; }
  FieldArgs args() const override;
  // Takes an NdArray of shape [rows, *inner_shape] (rows may be 0) of exactly the field's dtype.
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>& heap,
              const EncodeContext& context) const override;
  std::string check_column(const std::uint8_t* column) const override;
  std::vector<HeapRef> heap_refs(const std::uint8_t* column) const override;
  FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const override;
  std::string describe(const std::uint8_t* column) const override;

 private:
  DType dtype_;
  std::vector<std::uint64_t> inner_shape_;
  std::uint64_t row_bytes_ = 0;
};

}  // namespace ffcv
