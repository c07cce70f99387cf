#include "ffcv/fields/ragged_ndarray_field.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "util/shape_text.hpp"
#include "value_access.hpp"

namespace ffcv {
namespace {

// The argument blob's layout (ragged_ndarray_field.hpp).
constexpr std::string_view kMagic = "RaggedNDArray";
constexpr std::size_t kMagicBytes = 16;
constexpr std::size_t kVersionOffset = 16;  // u32
constexpr std::size_t kRankOffset = 20;     // u32
constexpr std::size_t kExtentsOffset = 24;  // 16 x u64
constexpr std::size_t kTypestrOffset = kExtentsOffset + RaggedNdArrayField::kMaxInnerDims * 8;
constexpr std::size_t kTypestrBytes = 16;

}  // namespace

RaggedNdArrayField::RaggedNdArrayField(DType dtype, std::vector<std::uint64_t> inner_shape)
    : dtype_(dtype), inner_shape_(std::move(inner_shape)) {
  if (inner_shape_.size() > kMaxInnerDims) {
    throw ConfigError("RaggedNDArray row shape " + shape_text(inner_shape_) +
                      " has more than 16 dimensions");
  }
  if (std::find(inner_shape_.begin(), inner_shape_.end(), 0) != inner_shape_.end()) {
    throw ConfigError("RaggedNDArray row shape " + shape_text(inner_shape_) +
                      " has a zero extent; rows must hold data");
  }
  row_bytes_ = dtype_.itemsize;
  for (const std::uint64_t extent : inner_shape_) {
    if (__builtin_mul_overflow(row_bytes_, extent, &row_bytes_)) {
      throw ConfigError("RaggedNDArray row shape " + shape_text(inner_shape_) + " of " +
                        dtype_.typestr() + " holds more bytes than 64 bits can count");
    }
  }
}

bool RaggedNdArrayField::recognizes(const FieldArgs& args) {
  return std::memcmp(args.data(), kMagic.data(), kMagic.size()) == 0 &&
         std::all_of(args.begin() + kMagic.size(), args.begin() + kMagicBytes,
                     [](std::uint8_t b) { return b == 0; });
}

RaggedNdArrayField RaggedNdArrayField::from_args(const FieldArgs& args) {
  if (!recognizes(args)) throw ConfigError("RaggedNDArray arguments: no 'RaggedNDArray' magic");
  const std::uint32_t version = load_le<std::uint32_t>(&args[kVersionOffset]);
  if (version != kVersion) {
    throw ConfigError("RaggedNDArray arguments: version " + std::to_string(version) +
                      " is not the version this build reads (1)");
  }
  const std::uint32_t rank = load_le<std::uint32_t>(&args[kRankOffset]);
  if (rank > kMaxInnerDims) {
    throw ConfigError("RaggedNDArray arguments: row rank " + std::to_string(rank) + " is over 16");
  }
  std::vector<std::uint64_t> inner;
  for (std::uint32_t d = 0; d < rank; ++d) {
    inner.push_back(load_le<std::uint64_t>(&args[kExtentsOffset + d * 8]));
  }
  const char* typestr = reinterpret_cast<const char*>(&args[kTypestrOffset]);
  const std::string dtype(typestr, strnlen(typestr, kTypestrBytes));
  return RaggedNdArrayField(DType::parse(dtype), std::move(inner));
}

std::string RaggedNdArrayField::row_text() const {
  return dtype_.typestr() + " " + shape_text(inner_shape_);
}

std::uint64_t RaggedNdArrayField::rows(const std::uint8_t* column) {
  return load_le<std::uint64_t>(column + 8);
}

std::uint64_t RaggedNdArrayField::pointer(const std::uint8_t* column) {
  return load_le<std::uint64_t>(column);
}

FieldArgs RaggedNdArrayField::args() const {
  FieldArgs args{};
  std::memcpy(args.data(), kMagic.data(), kMagic.size());
  store_le<std::uint32_t>(&args[kVersionOffset], kVersion);
  store_le<std::uint32_t>(&args[kRankOffset], static_cast<std::uint32_t>(inner_shape_.size()));
  for (std::size_t d = 0; d < inner_shape_.size(); ++d) {
    store_le(&args[kExtentsOffset + d * 8], inner_shape_[d]);
  }
  const std::string typestr = dtype_.typestr();
  std::memcpy(&args[kTypestrOffset], typestr.data(), std::min(typestr.size(), kTypestrBytes));
  return args;
}

void RaggedNdArrayField::encode(const FieldValue& value, std::uint8_t* column,
                                std::vector<EncodedAllocation>& heap, const EncodeContext&) const {
  const NdArray& array = expect_value<NdArray>(value, "RaggedNDArray", "an ndarray");
  if (!(array.dtype == dtype_)) {
    throw EncodeError("RaggedNDArray field of dtype " + dtype_.typestr() +
                      " got an array of dtype " + array.dtype.typestr());
  }
  if (array.shape.size() != inner_shape_.size() + 1 ||
      !std::equal(inner_shape_.begin(), inner_shape_.end(), array.shape.begin() + 1)) {
    std::string wanted = "[n";
    for (const std::uint64_t extent : inner_shape_) wanted += ", " + std::to_string(extent);
    throw EncodeError("RaggedNDArray field takes arrays of shape " + wanted + "], got " +
                      shape_text(array.shape));
  }
  const std::uint64_t rows = array.shape[0];
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(rows, row_bytes_, &bytes) || array.bytes.size() != bytes) {
    throw EncodeError("RaggedNDArray value of " + std::to_string(rows) + " rows holds " +
                      std::to_string(array.bytes.size()) + " bytes, expected rows x " +
                      std::to_string(row_bytes_));
  }
  store_le<std::uint64_t>(column + 8, rows);
  // No rows, no payload: the pointer stays 0 (FFCV cannot locate zero-size allocations).
  if (rows > 0) heap.push_back({array.bytes, 0});
}

std::string RaggedNdArrayField::check_column(const std::uint8_t* column) const {
  const std::uint64_t rows = RaggedNdArrayField::rows(column);
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(rows, row_bytes_, &bytes)) {
    return "RaggedNDArray row count " + std::to_string(rows) + " times " +
           std::to_string(row_bytes_) + " bytes per row overflows";
  }
  if (rows == 0 && pointer(column) != 0) {
    return "RaggedNDArray sample of 0 rows has data pointer " + std::to_string(pointer(column)) +
           " (must be 0)";
  }
  return {};
}

std::vector<HeapRef> RaggedNdArrayField::heap_refs(const std::uint8_t* column) const {
  const std::uint64_t rows = RaggedNdArrayField::rows(column);
  if (rows == 0) return {};
  return {{pointer(column), rows * row_bytes_}};
}

FieldValue RaggedNdArrayField::decode(const std::uint8_t* column, const PayloadReader& heap) const {
  const std::uint64_t rows = RaggedNdArrayField::rows(column);
  std::vector<std::uint64_t> shape{rows};
  shape.insert(shape.end(), inner_shape_.begin(), inner_shape_.end());
  if (rows == 0) return NdArray{dtype_, std::move(shape), {}};
  const auto payload = heap.payload(pointer(column), rows * row_bytes_);
  return NdArray{dtype_, std::move(shape),
                 std::vector<std::uint8_t>(payload.begin(), payload.end())};
}

std::string RaggedNdArrayField::describe(const std::uint8_t* column) const {
  return "{\"ptr\": " + std::to_string(pointer(column)) +
         ", \"rows\": " + std::to_string(rows(column)) + ", \"dtype\": \"" + dtype_.typestr() +
         "\", \"row_shape\": " + shape_text(inner_shape_) + "}";
}

}  // namespace ffcv
