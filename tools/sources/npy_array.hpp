// Reading NumPy .npy files (format versions 1-3), for writing arrays as dataset columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/dtype.hpp"

namespace ffcv::tools {

struct NpyArray {
  DType dtype;
  std::vector<std::uint64_t> shape;  // C order
  std::vector<std::uint8_t> data;    // the raw bytes, in the file's byte order

  std::uint64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::uint64_t row_bytes() const;
};

// Reads a whole .npy file. A path that is a folder or no regular file ("X: is a directory"), a
// file without the .npy magic ("X: not a .npy file (bad magic ...)"), and Fortran-ordered, object
// and structured arrays are refused with a ConfigError naming the file; a file that cannot be
// opened or read throws IoError.
NpyArray read_npy(const std::string& path);

// Writes a C-ordered .npy file (version 1.0). Throws IoError.
void write_npy(const std::string& path, const NpyArray& array);

}  // namespace ffcv::tools
