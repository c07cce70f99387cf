// The default decoders of the built-in fields (see ffcv/decoders.hpp).
#include <algorithm>
#include <cstring>

#include "ffcv/decoders.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "field_decoders.hpp"

namespace ffcv {
namespace {

template <typename FieldType>
const FieldType& field_as(const Reader& reader, std::size_t field, const char* decoder,
                          const char* wanted) {
  const auto* typed = dynamic_cast<const FieldType*>(reader.fields().at(field).field.get());
  if (typed == nullptr) {
    throw ConfigError(std::string(decoder) + " decoder needs a " + wanted + " field, '" +
                      reader.fields()[field].name + "' is " +
                      reader.fields()[field].field->type_name());
  }
  return *typed;
}

}  // namespace

TensorState IntDecoder::declare(const Reader& reader, std::size_t field) {
  field_as<IntField>(reader, field, "int", "Int");
  return {DType::parse("<i8"), {1}};
}

void IntDecoder::decode(const std::uint8_t* column, const PayloadReader&, std::uint8_t* out,
                        std::span<std::uint8_t>, const SampleContext&) const {
  std::memcpy(out, column, 8);
}

TensorState FloatDecoder::declare(const Reader& reader, std::size_t field) {
  field_as<FloatField>(reader, field, "float", "Float");
  return {DType::parse("<f8"), {1}};
}

void FloatDecoder::decode(const std::uint8_t* column, const PayloadReader&, std::uint8_t* out,
                          std::span<std::uint8_t>, const SampleContext&) const {
  std::memcpy(out, column, 8);
}

TensorState NdArrayDecoder::declare(const Reader& reader, std::size_t field) {
  const auto& array = field_as<NdArrayField>(reader, field, "ndarray", "NDArray");
  bytes_ = array.element_bytes();
  return {array.dtype(), array.shape()};
}

void NdArrayDecoder::decode(const std::uint8_t* column, const PayloadReader& payloads,
                            std::uint8_t* out, std::span<std::uint8_t>,
                            const SampleContext&) const {
  const auto payload = payloads.payload(load_le<std::uint64_t>(column), bytes_);
  std::memcpy(out, payload.data(), bytes_);
}

TensorState BytesDecoder::declare(const Reader& reader, std::size_t field) {
  field_as<BytesField>(reader, field, "bytes", "Bytes or JSON");
  max_size_ = 0;
  for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
    const AllocEntry* entry =
        reader.find_allocation(load_le<std::uint64_t>(reader.column(i, field)));
    if (entry != nullptr) max_size_ = std::max(max_size_, entry->size);
  }
  return {DType::parse("|u1"), {max_size_ + 8}};
}

void BytesDecoder::decode(const std::uint8_t* column, const PayloadReader& payloads,
                          std::uint8_t* out, std::span<std::uint8_t>, const SampleContext&) const {
  const auto payload = payloads.payload(load_le<std::uint64_t>(column));
  std::memcpy(out, payload.data(), payload.size());
  std::memset(out + payload.size(), 0, max_size_ - payload.size());
  store_le<std::uint64_t>(out + max_size_, payload.size());
}

RaggedDecoder::RaggedDecoder(RaggedDecoderOptions options) : options_(std::move(options)) {
  if (options_.rows != RowKind::kValues && options_.follows.empty()) {
    throw ConfigError("ragged: boxes move with an image only when `follows` names its output");
  }
}

TensorState RaggedDecoder::declare(const Reader& reader, std::size_t field) {
  const auto& ragged = field_as<RaggedNdArrayField>(reader, field, "ragged", "RaggedNDArray");
  if (options_.rows != RowKind::kValues &&
      !(ragged.dtype() == DType::parse("<f4") &&
        ragged.inner_shape() == std::vector<std::uint64_t>{4})) {
    throw ConfigError("ragged: boxes are rows of <f4 [4], but '" + reader.fields()[field].name +
                      "' holds rows of " + ragged.row_text());
  }
  row_bytes_ = ragged.row_bytes();
  return {ragged.dtype(), ragged.inner_shape()};
}

std::uint64_t RaggedDecoder::move_rows(std::uint8_t* rows, std::uint64_t count,
                                       const PlaneMaps& maps, std::uint8_t* kept) const {
  // Rows are 4-byte aligned in the batch: they follow 64-byte aligned index words in rows of
  // 16 bytes.
  return move_boxes(reinterpret_cast<float*>(rows), count, options_.rows, maps, options_.limits,
                    kept);
}

std::uint64_t RaggedDecoder::rows(const std::uint8_t* column) const {
  return RaggedNdArrayField::rows(column);
}

void RaggedDecoder::decode(const std::uint8_t* column, const PayloadReader& payloads,
                           std::uint8_t* out, std::span<std::uint8_t>, const SampleContext&) const {
  const std::uint64_t bytes = RaggedNdArrayField::rows(column) * row_bytes_;  // checked on open
  if (bytes == 0) return;
  std::memcpy(out, payloads.payload(RaggedNdArrayField::pointer(column), bytes).data(), bytes);
}

TensorState SimpleImageDecoder::declare(const Reader& reader, std::size_t field) {
  field_as<RgbImageField>(reader, field, "image", "RGBImage");
  for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
    const ImageMetadata image = ImageMetadata::load(reader.column(i, field));
    if (i == 0) {
      width_ = image.width;
      height_ = image.height;
    } else if (image.width != width_ || image.height != height_) {
      throw ConfigError("image decoder needs images of one size, but '" +
                        reader.fields()[field].name + "' has " + std::to_string(width_) + "x" +
                        std::to_string(height_) + " (sample 0) and " + std::to_string(image.width) +
                        "x" + std::to_string(image.height) + " (sample " + std::to_string(i) +
                        "); use a cropping decoder");
    }
  }
  return {DType::parse("|u1"), {height_, width_, 3}};
}

std::uint64_t SimpleImageDecoder::scratch_bytes() const { return 0; }

void SimpleImageDecoder::map_geometry(const std::uint8_t* column, const SampleContext&,
                                      PlaneMaps& maps) const {
  const ImageMetadata image = ImageMetadata::load(column);  // every pixel stays in place
  maps.push(PlaneMap::identity(image.width, image.height));
}

void SimpleImageDecoder::decode(const std::uint8_t* column, const PayloadReader& payloads,
                                std::uint8_t* out, std::span<std::uint8_t>,
                                const SampleContext&) const {
  const ImageMetadata image = ImageMetadata::load(column);
  if (image.mode == StoredImageMode::kRaw) {
    const std::uint64_t bytes = std::uint64_t{image.width} * image.height * 3;
    std::memcpy(out, payloads.payload(image.data_ptr, bytes).data(), bytes);
    return;
  }
  decode_jpeg_into(payloads.payload(image.data_ptr), out, image.width, image.height);
}

std::shared_ptr<Decoder> default_decoder(const Reader& reader, std::size_t field) {
  const Field* f = reader.fields().at(field).field.get();
  if (dynamic_cast<const IntField*>(f)) return std::make_shared<IntDecoder>();
  if (dynamic_cast<const FloatField*>(f)) return std::make_shared<FloatDecoder>();
  if (dynamic_cast<const NdArrayField*>(f)) return std::make_shared<NdArrayDecoder>();
  if (dynamic_cast<const BytesField*>(f)) return std::make_shared<BytesDecoder>();
  if (dynamic_cast<const RgbImageField*>(f)) return std::make_shared<SimpleImageDecoder>();
  if (dynamic_cast<const RaggedNdArrayField*>(f)) {
    return std::make_shared<RaggedDecoder>(RaggedDecoderOptions{});
  }
  throw ConfigError("field '" + reader.fields()[field].name + "' of type " + f->type_name() +
                    " has no default decoder; give its pipeline a decoder");
}

}  // namespace ffcv
