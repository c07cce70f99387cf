// Features and targets from .npy files (the sparse-regression study's input).
//
// Row i of the features array (shape N x ...) becomes an NDArray value; row i of the targets
// array becomes an Int (integer dtypes of shape (N,)), a Float (float dtypes of shape (N,)), or
// an NDArray (any other shape). Samples are (features, target). Both files are memory-mapped,
// so a features array larger than memory is read as the writer goes. Big-endian arrays ('>f4',
// '>i8', ...) are converted to little-endian as they are written: a .beton holds little-endian
// numbers only, as FFCV writes them.
//
// Boolean masks can be stored packed (pack_bits): a row of d booleans, flattened in C order,
// becomes d / 8 bytes rounded up, an NDArray of dtype |u1, laid out as
// numpy.packbits(row, bitorder='big') lays it out (the first feature in the most significant
// bit of byte 0, zero bits after the last). Python FFCV reads them as plain uint8 arrays, and
// np.unpackbits(a)[:d] gives the mask back: d itself is not in the .beton, so the reader must be
// told it (packed_bits()).
#pragma once

#include "ffcv/dataset_writer.hpp"
#include "ffcv/format/npy_array.hpp"

namespace ffcv::tools {

class NpySource final : public SampleSource {
 public:
  // Throws ConfigError when the row counts differ, an array has no rows dimension, a uint64
  // target column holds a value beyond 2^63 - 1 (an Int field stores int64; the error names the
  // row), or pack_bits is asked for features that are not booleans (dtype |b1) or have no
  // elements per row. map_npy's refusals (npy_array.hpp) come first.
  NpySource(const std::string& features_path, const std::string& targets_path,
            bool pack_bits = false);

  std::uint64_t size() const override { return features_.rows(); }
  // Throws FormatError when a file shrank or could not be read since it was mapped.
  std::vector<FieldValue> load(std::uint64_t index) const override;

  // The fields matching this source: features as NDArray, targets as Int/Float/NDArray.
  std::vector<NamedField> fields() const;

  // The number of booleans per sample when they are packed (d), else 0.
  std::uint64_t packed_bits() const { return pack_bits_ ? features_.row_bytes() : 0; }

 private:
  MappedNpy features_, targets_;
  bool pack_bits_ = false;
};

// Packs `mask` (one byte per boolean, any nonzero byte true) as numpy.packbits(mask,
// bitorder='big') does.
std::vector<std::uint8_t> pack_bits(std::span<const std::uint8_t> mask);

}  // namespace ffcv::tools
