#include "npy_source.hpp"

#include "ffcv/errors.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/little_endian.hpp"

namespace ffcv::tools {
namespace {

bool is_scalar_column(const NpyArray& array) {
  return array.shape.size() == 1 && array.dtype.byte_order != '>' &&
         (array.dtype.kind == 'i' || array.dtype.kind == 'u' || array.dtype.kind == 'f' ||
          array.dtype.kind == 'b');
}

FieldValue row_value(const NpyArray& array, std::uint64_t row) {
  const std::uint8_t* p = array.data.data() + row * array.row_bytes();
  if (is_scalar_column(array)) {
    const std::size_t size = array.dtype.itemsize;
    switch (array.dtype.kind) {
      case 'f':
        if (size == 4) return static_cast<double>(load_le<float>(p));
        if (size == 8) return load_le<double>(p);
        break;
      case 'i':
        if (size == 1) return std::int64_t{static_cast<std::int8_t>(*p)};
        if (size == 2) return std::int64_t{load_le<std::int16_t>(p)};
        if (size == 4) return std::int64_t{load_le<std::int32_t>(p)};
        return load_le<std::int64_t>(p);
      case 'u':
      case 'b':
        if (size == 1) return std::int64_t{*p};
        if (size == 2) return std::int64_t{load_le<std::uint16_t>(p)};
        if (size == 4) return std::int64_t{load_le<std::uint32_t>(p)};
        return static_cast<std::int64_t>(load_le<std::uint64_t>(p));
    }
  }
  NdArray value;
  value.dtype = array.dtype;
  value.shape.assign(array.shape.begin() + 1, array.shape.end());
  if (value.shape.empty()) value.shape = {1};
  value.bytes.assign(p, p + array.row_bytes());
  return value;
}

FieldPtr column_field(const NpyArray& array) {
  if (is_scalar_column(array)) {
    if (array.dtype.kind == 'f' && array.dtype.itemsize >= 4) return std::make_shared<FloatField>();
    if (array.dtype.kind != 'f') return std::make_shared<IntField>();
  }
  std::vector<std::uint64_t> shape(array.shape.begin() + 1, array.shape.end());
  if (shape.empty()) shape = {1};
  return std::make_shared<NdArrayField>(array.dtype, shape);
}

}  // namespace

NpySource::NpySource(const std::string& features_path, const std::string& targets_path)
    : features_(read_npy(features_path)), targets_(read_npy(targets_path)) {
  if (features_.shape.empty() || targets_.shape.empty()) {
    throw ConfigError("features and targets must be arrays with a first (rows) dimension");
  }
  if (features_.rows() != targets_.rows()) {
    throw ConfigError("'" + features_path + "' has " + std::to_string(features_.rows()) +
                      " rows but '" + targets_path + "' has " + std::to_string(targets_.rows()));
  }
}

std::vector<FieldValue> NpySource::load(std::uint64_t index) const {
  return {row_value(features_, index), row_value(targets_, index)};
}

std::vector<NamedField> NpySource::fields() const {
  return {{"features", column_field(features_)}, {"target", column_field(targets_)}};
}

}  // namespace ffcv::tools
