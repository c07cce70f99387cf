// Reading MATLAB's level-5 MAT files: just enough for the ImageNet devkit's meta.mat, whose
// `synsets` struct array numbers the 1,000 classes of the validation ground truth.
//
// Supported: little-endian files, compressed (zlib) and plain data elements, the small data
// element form, struct and cell arrays, char arrays (UTF-8, UTF-16 or 8/16-bit codes) and real
// numeric arrays of any stored type (read as doubles). Anything else (big-endian files, sparse,
// complex or object arrays, v7.3 HDF5 files) is refused with FormatError naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ffcv::tools {

struct MatArray {
  enum class Kind { kNumeric, kChar, kCell, kStruct };
  Kind kind = Kind::kNumeric;
  std::vector<std::uint64_t> dims;       // MATLAB's dimensions (column-major)
  std::vector<double> numbers;           // kNumeric: the real part, column-major
  std::string text;                      // kChar: the characters as UTF-8, column-major
  std::vector<MatArray> cells;           // kCell: each cell; kStruct: element e's field f at
                                         //   e * field_names.size() + f
  std::vector<std::string> field_names;  // kStruct

  std::uint64_t element_count() const;
  // kStruct: element `e`'s field `name`; FormatError when there is none.
  const MatArray& field(std::uint64_t e, const std::string& name) const;
};

// The top-level variables of the MAT file in `bytes`, by name. `path` names the file in errors.
std::map<std::string, MatArray> read_mat_file(std::span<const std::uint8_t> bytes,
                                              const std::string& path);

}  // namespace ffcv::tools
