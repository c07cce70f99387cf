// Reading NumPy .npy files (format versions 1-3), for writing arrays as dataset columns.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ffcv/format/dtype.hpp"
#include "ffcv/util/mapped_file.hpp"

namespace ffcv {

// An array read into memory (read_npy), or made to be written (write_npy).
struct NpyArray {
  DType dtype;
  std::vector<std::uint64_t> shape;  // C order
  std::vector<std::uint8_t> data;    // the raw bytes, in the file's byte order

  std::uint64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::uint64_t row_bytes() const;
};

// An array left in its file, mapped read-only (map_npy): a features array of several GB is read
// page by page as its rows are used, never copied whole into memory.
struct MappedNpy {
  DType dtype;
  std::vector<std::uint64_t> shape;        // C order
  std::shared_ptr<const MappedFile> file;  // keeps `data` valid
  std::span<const std::uint8_t> data;      // the raw bytes after the header

  std::uint64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::uint64_t row_bytes() const;
  // Row `row`'s bytes (row_bytes() of them).
  const std::uint8_t* row(std::uint64_t row) const { return data.data() + row * row_bytes(); }
};

// Maps a .npy file and checks its header. A path that is a folder or no regular file ("X: is a
// directory"), a file without the .npy magic ("X: not a .npy file (bad magic ...)"), a data size
// other than the header's shape promises, and Fortran-ordered, object, structured and complex
// arrays are refused with a ConfigError naming the file; so is a shape that is no tuple of
// non-negative numbers, or whose byte count (a row's, or the whole array's) does not fit 64 bits:
// the sizes are computed in checked arithmetic, as everything read from a file is. A file that
// cannot be opened or mapped throws IoError. A file truncated while mapped reads zeros:
// `file->check_intact()` tells. The data keeps the file's byte order (`dtype.byte_order`).
MappedNpy map_npy(const std::string& path);

// An integer or bool element (kind 'i', 'u' or 'b', little-endian, 1 to 8 bytes) as int64; a
// uint64 above 2^63 - 1 wraps to a negative number, which callers that need it refuse.
std::int64_t little_endian_integer(const std::uint8_t* element, const DType& dtype);

// Reads a whole .npy file into memory; refuses what map_npy refuses.
NpyArray read_npy(const std::string& path);

// Writes a C-ordered .npy file (version 1.0). Throws IoError.
void write_npy(const std::string& path, const NpyArray& array);

}  // namespace ffcv
