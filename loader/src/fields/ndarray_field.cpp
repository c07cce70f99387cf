#include "ffcv/fields/ndarray_field.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "util/shape_text.hpp"
#include "value_access.hpp"

namespace ffcv {
namespace {

constexpr std::size_t kShapeBytes = NdArrayField::kMaxDims * 8;  // 32 x u8
constexpr std::size_t kTypeLengthOffset = kShapeBytes;           // u8
constexpr std::size_t kTypeJsonOffset = kShapeBytes + 8;
constexpr std::size_t kMaxTypeJson = kFieldArgsSize - kTypeJsonOffset;  // 760

}  // namespace

NdArrayField::NdArrayField(DType dtype, std::vector<std::uint64_t> shape, std::uint8_t type_id)
    : dtype_(dtype), shape_(std::move(shape)), type_id_(type_id) {
  if (shape_.empty()) throw ConfigError("NDArray field needs at least one dimension");
  if (shape_.size() > kMaxDims) {
    throw ConfigError("NDArray field shape " + shape_text(shape_) + " has more than 32 dimensions");
  }
  if (std::find(shape_.begin(), shape_.end(), 0) != shape_.end()) {
    throw ConfigError("NDArray field shape " + shape_text(shape_) +
                      " has a zero dimension: FFCV cannot read back a shape ending in 0 nor "
                      "locate zero-size data");
  }
  // A sample's byte count must fit 64 bits (checked: the shape may come from a corrupt file).
  std::uint64_t bytes = dtype_.itemsize;
  for (const std::uint64_t dim : shape_) {
    if (__builtin_mul_overflow(bytes, dim, &bytes)) {
      throw ConfigError("NDArray field shape " + shape_text(shape_) + " of " + dtype_.typestr() +
                        " holds more bytes than 64 bits can count");
    }
  }
  if (type_id_ != kTypeId && type_id_ != kTorchTensorTypeId) {
    throw ConfigError("NDArray field type id must be 4 or 6");
  }
}

NdArrayField NdArrayField::from_args(const FieldArgs& args, std::uint8_t type_id) {
  std::vector<std::uint64_t> shape;
  for (std::size_t i = 0; i < kMaxDims; ++i) shape.push_back(load_le<std::uint64_t>(&args[i * 8]));
  while (!shape.empty() && shape.back() == 0) shape.pop_back();
  const std::uint64_t type_length = load_le<std::uint64_t>(&args[kTypeLengthOffset]);
  if (type_length == 0 || type_length > kMaxTypeJson) {
    throw ConfigError("NDArray arguments: dtype description length " + std::to_string(type_length) +
                      " is outside 1..760");
  }
  const std::string json(reinterpret_cast<const char*>(&args[kTypeJsonOffset]), type_length);
  return NdArrayField(DType::from_descr_json(json), std::move(shape), type_id);
}

std::uint64_t NdArrayField::element_bytes() const {
  return std::accumulate(shape_.begin(), shape_.end(), std::uint64_t{dtype_.itemsize},
                         std::multiplies<>());
}

std::string NdArrayField::type_name() const {
  return type_id_ == kTorchTensorTypeId ? "TorchTensor" : "NDArray";
}

FieldArgs NdArrayField::args() const {
  FieldArgs args{};
  for (std::size_t i = 0; i < shape_.size(); ++i) store_le(&args[i * 8], shape_[i]);
  const std::string json = dtype_.descr_json();
  store_le<std::uint64_t>(&args[kTypeLengthOffset], json.size());
  std::memcpy(&args[kTypeJsonOffset], json.data(), json.size());
  return args;
}

void NdArrayField::encode(const FieldValue& value, std::uint8_t* column,
                          std::vector<EncodedAllocation>& heap, const EncodeContext&) const {
  const NdArray& array = expect_value<NdArray>(value, "NDArray", "an ndarray");
  if (!(array.dtype == dtype_)) {
    throw EncodeError("NDArray field of dtype " + dtype_.typestr() + " got an array of dtype " +
                      array.dtype.typestr());
  }
  const auto count = [](const std::vector<std::uint64_t>& s) {
    return std::accumulate(s.begin(), s.end(), std::uint64_t{1}, std::multiplies<>());
  };
  if (count(array.shape) != count(shape_)) {
    throw EncodeError("NDArray field of shape " + shape_text(shape_) + " got an array of shape " +
                      shape_text(array.shape));
  }
  if (array.bytes.size() != element_bytes()) {
    throw EncodeError("NDArray value holds " + std::to_string(array.bytes.size()) +
                      " bytes, expected " + std::to_string(element_bytes()));
  }
  heap.push_back({array.bytes, 0});
  (void)column;  // the pointer is stored at offset 0 by the writer
}

std::vector<HeapRef> NdArrayField::heap_refs(const std::uint8_t* column) const {
  return {{load_le<std::uint64_t>(column), element_bytes()}};
}

FieldValue NdArrayField::decode(const std::uint8_t* column, const PayloadReader& heap) const {
  const auto payload = heap.payload(load_le<std::uint64_t>(column));
  return NdArray{dtype_, shape_, std::vector<std::uint8_t>(payload.begin(), payload.end())};
}

std::string NdArrayField::describe(const std::uint8_t* column) const {
  return "{\"ptr\": " + std::to_string(load_le<std::uint64_t>(column)) + ", \"dtype\": \"" +
         dtype_.typestr() + "\", \"shape\": " + shape_text(shape_) + "}";
}

}  // namespace ffcv
