#include "npy_source.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"

namespace ffcv::tools {
namespace {

const DType kPackedDType{'|', 'u', 1};

// The dtype a column is stored with: big-endian arrays are converted to little-endian, the byte
// order of every .beton (and of what Python FFCV and the SAGA reader expect).
DType stored_dtype(const MappedNpy& array) {
  DType dtype = array.dtype;
  if (dtype.byte_order == '>') dtype.byte_order = '<';
  return dtype;
}

bool is_scalar_column(const MappedNpy& array) {
  return array.shape.size() == 1 && (array.dtype.kind == 'i' || array.dtype.kind == 'u' ||
                                     array.dtype.kind == 'f' || array.dtype.kind == 'b');
}

// Row `row`'s bytes in little-endian order: as they are, or each element's bytes reversed.
std::vector<std::uint8_t> little_endian_row(const MappedNpy& array, std::uint64_t row) {
  const std::uint8_t* p = array.row(row);
  std::vector<std::uint8_t> bytes(p, p + array.row_bytes());
  const std::size_t size = array.dtype.itemsize;
  if (array.dtype.byte_order == '>' && size > 1) {
    for (std::size_t at = 0; at + size <= bytes.size(); at += size) {
      std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                   bytes.begin() + static_cast<std::ptrdiff_t>(at + size));
    }
  }
  return bytes;
}

FieldValue row_value(const MappedNpy& array, std::uint64_t row) {
  std::vector<std::uint8_t> bytes = little_endian_row(array, row);
  const std::uint8_t* p = bytes.data();
  if (is_scalar_column(array)) {
    const std::size_t size = array.dtype.itemsize;
    switch (array.dtype.kind) {
      case 'f':
        if (size == 4) return static_cast<double>(load_le<float>(p));
        if (size == 8) return load_le<double>(p);
        break;
      case 'i':
      case 'u':
      case 'b':
        // The constructor refused uint64 values an Int cannot hold.
        return little_endian_integer(p, array.dtype);
    }
  }
  NdArray value;
  value.dtype = stored_dtype(array);
  value.shape.assign(array.shape.begin() + 1, array.shape.end());
  if (value.shape.empty()) value.shape = {1};
  value.bytes = std::move(bytes);
  return value;
}

FieldPtr column_field(const MappedNpy& array) {
  if (is_scalar_column(array)) {
    if (array.dtype.kind == 'f' && array.dtype.itemsize >= 4) return std::make_shared<FloatField>();
    if (array.dtype.kind != 'f') return std::make_shared<IntField>();
  }
  std::vector<std::uint64_t> shape(array.shape.begin() + 1, array.shape.end());
  if (shape.empty()) shape = {1};
  return std::make_shared<NdArrayField>(stored_dtype(array), shape);
}

// An Int field stores int64: a uint64 target column may hold only values up to 2^63 - 1.
void check_targets_fit_int(const MappedNpy& targets, const std::string& path) {
  if (!is_scalar_column(targets) || targets.dtype.kind != 'u' || targets.dtype.itemsize != 8) {
    return;
  }
  constexpr std::uint64_t kMaxInt = static_cast<std::uint64_t>(INT64_MAX);
  for (std::uint64_t row = 0; row < targets.rows(); ++row) {
    const std::uint64_t value = load_le<std::uint64_t>(little_endian_row(targets, row).data());
    if (value > kMaxInt) {
      throw ConfigError("'" + path + "' row " + std::to_string(row) + " holds " +
                        std::to_string(value) +
                        ", beyond the largest integer target a .beton stores (2^63 - 1, "
                        "int64); save the targets as int64 if they fit, or as float64");
    }
  }
  targets.file->check_intact();
}

std::uint64_t packed_size(std::uint64_t bits) { return (bits + 7) / 8; }

}  // namespace

std::vector<std::uint8_t> pack_bits(std::span<const std::uint8_t> mask) {
  std::vector<std::uint8_t> packed(packed_size(mask.size()), 0);
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) packed[i / 8] |= static_cast<std::uint8_t>(0x80u >> (i % 8));
  }
  return packed;
}

NpySource::NpySource(const std::string& features_path, const std::string& targets_path,
                     bool pack_bits)
    : features_(map_npy(features_path)), targets_(map_npy(targets_path)), pack_bits_(pack_bits) {
  if (features_.shape.empty() || targets_.shape.empty()) {
    throw ConfigError("features and targets must be arrays with a first (rows) dimension");
  }
  if (features_.rows() != targets_.rows()) {
    throw ConfigError("'" + features_path + "' has " + std::to_string(features_.rows()) +
                      " rows but '" + targets_path + "' has " + std::to_string(targets_.rows()));
  }
  if (pack_bits_ && (features_.dtype.kind != 'b' || features_.dtype.itemsize != 1)) {
    throw ConfigError("--pack-bits needs boolean features (numpy dtype bool, '|b1'), but '" +
                      features_path + "' holds '" + features_.dtype.typestr() +
                      "': save X.astype(bool), or write without --pack-bits");
  }
  check_targets_fit_int(targets_, targets_path);
  if (pack_bits_ && features_.row_bytes() == 0) {
    throw ConfigError("--pack-bits: '" + features_path + "' has no features per sample");
  }
}

std::vector<FieldValue> NpySource::load(std::uint64_t index) const {
  std::vector<FieldValue> values;
  if (pack_bits_) {
    NdArray packed{kPackedDType, {packed_size(features_.row_bytes())}, {}};
    packed.bytes = pack_bits({features_.row(index), features_.row_bytes()});
    values.push_back(std::move(packed));
  } else {
    values.push_back(row_value(features_, index));
  }
  values.push_back(row_value(targets_, index));
  features_.file->check_intact();
  targets_.file->check_intact();
  return values;
}

std::vector<NamedField> NpySource::fields() const {
  FieldPtr features =
      pack_bits_ ? std::make_shared<NdArrayField>(
                       kPackedDType, std::vector<std::uint64_t>{packed_size(features_.row_bytes())})
                 : column_field(features_);
  return {{"features", features}, {"target", column_field(targets_)}};
}

}  // namespace ffcv::tools
