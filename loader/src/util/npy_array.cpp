#include "ffcv/npy_array.hpp"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "ffcv/errors.hpp"
#include "ffcv/little_endian.hpp"

namespace ffcv {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// The text of `key`'s value in the header dict: "'descr': '<f4', 'fortran_order': False, ...".
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw ConfigError("'" + path + "': .npy header lacks '" + key + "'");
  std::size_t start = header.find(':', at) + 1;
  while (start < header.size() && header[start] == ' ') ++start;
  std::size_t end = start;
  if (header[start] == '(') {
    end = header.find(')', start) + 1;
  } else if (header[start] == '\'') {
    end = header.find('\'', start + 1) + 1;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return header.substr(start, end - start);
}

std::uint64_t row_bytes_of(const DType& dtype, const std::vector<std::uint64_t>& shape) {
  if (shape.empty()) return dtype.itemsize;
  return std::accumulate(shape.begin() + 1, shape.end(), std::uint64_t{dtype.itemsize},
                         std::multiplies<>());
}

}  // namespace

std::uint64_t NpyArray::row_bytes() const { return row_bytes_of(dtype, shape); }

std::uint64_t MappedNpy::row_bytes() const { return row_bytes_of(dtype, shape); }

MappedNpy map_npy(const std::string& path) {
  // A folder maps as nothing useful and fails with the system's words: judge the path first.
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) throw IoError(path, "open", error.value());
  if (std::filesystem::is_directory(status)) throw ConfigError(path + ": is a directory");
  if (!std::filesystem::is_regular_file(status)) throw ConfigError(path + ": not a regular file");
  MappedNpy array;
  array.file = std::make_shared<const MappedFile>(path);
  const std::span<const std::uint8_t> bytes = array.file->bytes();
  if (bytes.size() < 10 || std::string(bytes.begin(), bytes.begin() + 6) != kMagic) {
    throw ConfigError(path + ": not a .npy file (bad magic: it does not start with \\x93NUMPY)");
  }
  const int major = bytes[6];
  std::size_t header_length = 0, header_start = 0;
  if (major == 1) {
    header_length = load_le<std::uint16_t>(&bytes[8]);
    header_start = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    header_length = load_le<std::uint32_t>(&bytes[8]);
    header_start = 12;
  } else {
    throw ConfigError("'" + path + "': unsupported .npy version " + std::to_string(major));
  }
  if (header_start + header_length > bytes.size()) {
    throw ConfigError("'" + path + "' is truncated inside its header");
  }
  const std::string header(bytes.begin() + header_start,
                           bytes.begin() + header_start + header_length);
  std::string descr = dict_value(header, "descr", path);
  if (descr.size() < 2 || descr.front() != '\'') {
    throw ConfigError("'" + path + "': structured dtypes are not supported");
  }
  try {
    array.dtype = DType::parse(descr.substr(1, descr.size() - 2));
  } catch (const ConfigError& error) {
    throw ConfigError("'" + path + "': " + error.what());
  }
  if (dict_value(header, "fortran_order", path) != "False") {
    throw ConfigError("'" + path +
                      "': Fortran-ordered arrays are not supported (save with "
                      "np.ascontiguousarray)");
  }
  const std::string shape = dict_value(header, "shape", path);
  std::uint64_t value = 0;
  bool in_number = false;
  for (const char c : shape) {
    if (c >= '0' && c <= '9') {
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
      in_number = true;
    } else if (in_number) {
      array.shape.push_back(value);
      value = 0;
      in_number = false;
    }
  }
  const std::uint64_t expected = array.rows() * array.row_bytes();
  const std::size_t data_start = header_start + header_length;
  if (bytes.size() - data_start != expected) {
    throw ConfigError("'" + path + "' holds " + std::to_string(bytes.size() - data_start) +
                      " data bytes, its header promises " + std::to_string(expected));
  }
  array.data = bytes.subspan(data_start);
  array.file->check_intact();
  return array;
}

NpyArray read_npy(const std::string& path) {
  const MappedNpy mapped = map_npy(path);
  NpyArray array{mapped.dtype, mapped.shape, {mapped.data.begin(), mapped.data.end()}};
  mapped.file->check_intact();
  return array;
}

void write_npy(const std::string& path, const NpyArray& array) {
  std::string shape = "(";
  for (std::size_t i = 0; i < array.shape.size(); ++i) {
    shape += std::to_string(array.shape[i]) + (array.shape.size() == 1 ? "," : "");
    if (i + 1 < array.shape.size()) shape += ", ";
  }
  shape += ")";
  std::string header = "{'descr': '" + array.dtype.typestr() +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  if (!out) throw IoError(path, "create", errno);
  std::uint8_t length[2];
  store_le<std::uint16_t>(length, static_cast<std::uint16_t>(header.size()));
  out.write(kMagic, 6);
  out.put(1);
  out.put(0);
  out.write(reinterpret_cast<const char*>(length), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(array.data.data()),
            static_cast<std::streamsize>(array.data.size()));
  if (!out) throw IoError(path, "write", errno);
}

}  // namespace ffcv
