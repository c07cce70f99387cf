#include "ffcv/fields/bytes_fields.hpp"

#include <algorithm>

#include "ffcv/util/little_endian.hpp"
#include "value_access.hpp"

namespace ffcv {

void BytesField::encode_payload(const std::uint8_t* data, std::size_t size, std::uint8_t* column,
                                std::vector<EncodedAllocation>& heap) const {
  if (size == 0) {
    throw EncodeError(type_name() +
                      " field cannot store an empty value (FFCV readers cannot locate "
                      "zero-size allocations)");
  }
  heap.push_back({std::vector<std::uint8_t>(data, data + size), 0});
  store_le<std::uint64_t>(column + 8, size);
}

void BytesField::encode(const FieldValue& value, std::uint8_t* column,
                        std::vector<EncodedAllocation>& heap, const EncodeContext&) const {
  const Bytes& bytes = expect_value<Bytes>(value, "Bytes", "bytes");
  encode_payload(bytes.data(), bytes.size(), column, heap);
}

std::vector<HeapRef> BytesField::heap_refs(const std::uint8_t* column) const {
  // FFCV reads the payload size from the allocation table only; the metadata size is advisory
  // (FFCV stores an element count there), so it is not required to match.
  return {{load_le<std::uint64_t>(column), std::nullopt}};
}

FieldValue BytesField::decode(const std::uint8_t* column, const PayloadReader& heap) const {
  const auto payload = heap.payload(load_le<std::uint64_t>(column));
  return Bytes(payload.begin(), payload.end());
}

std::string BytesField::describe(const std::uint8_t* column) const {
  return "{\"ptr\": " + std::to_string(load_le<std::uint64_t>(column)) +
         ", \"size\": " + std::to_string(load_le<std::uint64_t>(column + 8)) + "}";
}

void JsonField::encode(const FieldValue& value, std::uint8_t* column,
                       std::vector<EncodedAllocation>& heap, const EncodeContext&) const {
  const JsonText& json = expect_value<JsonText>(value, "JSON", "JSON text");
  if (json.text.find('\0') != std::string::npos) {
    throw EncodeError("JSON field value contains a NUL byte");
  }
  std::string payload = json.text;
  payload.push_back('\0');  // FFCV's terminator, part of the stored size
  encode_payload(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), column,
                 heap);
}

FieldValue JsonField::decode(const std::uint8_t* column, const PayloadReader& heap) const {
  const auto payload = heap.payload(load_le<std::uint64_t>(column));
  const auto end = std::find(payload.begin(), payload.end(), std::uint8_t{0});
  return JsonText{std::string(payload.begin(), end)};
}

}  // namespace ffcv
