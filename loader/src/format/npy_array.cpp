#include "ffcv/format/npy_array.hpp"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"

namespace ffcv {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// The text of `key`'s value in the header dict: "'descr': '<f4', 'fortran_order': False, ...".
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::size_t at = header.find("'" + key + "'");
  const std::size_t colon = at == std::string::npos ? at : header.find(':', at);
  if (colon == std::string::npos) {
    throw ConfigError("'" + path + "': .npy header lacks '" + key + "'");
  }
  std::size_t start = colon + 1;
  while (start < header.size() && header[start] == ' ') ++start;
  std::size_t end = start;
  if (start < header.size() && (header[start] == '(' || header[start] == '\'')) {
    end = header.find(header[start] == '(' ? ')' : '\'', start + 1);
    if (end == std::string::npos) {
      throw ConfigError("'" + path + "': .npy header: the value of '" + key + "' is not closed");
    }
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return header.substr(start, end - start);
}

// a * b, or nullopt when it does not fit 64 bits.
std::optional<std::uint64_t> checked_product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// The dimensions of a shape tuple: "()", "(7,)", "(3, 4)". A sign, a non-digit or a number
// beyond 64 bits is refused: numpy writes none of them, so the file is corrupt or crafted.
std::vector<std::uint64_t> parse_shape(const std::string& text, const std::string& path) {
  const auto malformed = [&](const std::string& why) {
    return ConfigError("'" + path + "': .npy header shape " + text + ": " + why);
  };
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    throw malformed("not a tuple");
  }
  std::vector<std::uint64_t> shape;
  std::size_t i = 1;
  const std::size_t close = text.size() - 1;
  const auto skip_spaces = [&] {
    while (i < close && text[i] == ' ') ++i;
  };
  skip_spaces();
  while (i < close) {
    if (text[i] == '-') throw malformed("a negative dimension");
    if (text[i] < '0' || text[i] > '9') throw malformed("a dimension that is not a number");
    std::uint64_t value = 0;
    for (; i < close && text[i] >= '0' && text[i] <= '9'; ++i) {
      const auto tens = checked_product(value, 10);
      if (!tens ||
          __builtin_add_overflow(*tens, static_cast<std::uint64_t>(text[i] - '0'), &value)) {
        throw malformed("a dimension beyond 64 bits");
      }
    }
    shape.push_back(value);
    skip_spaces();
    if (i < close && text[i] != ',') throw malformed("a dimension that is not a number");
    if (i < close) ++i;  // the comma
    skip_spaces();
  }
  return shape;
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
  if (array.dtype.kind == 'c') {
    throw ConfigError("'" + path + "': complex dtype '" + array.dtype.typestr() +
                      "' is not supported: store the real and imaginary parts as real arrays");
  }
  if (dict_value(header, "fortran_order", path) != "False") {
    throw ConfigError("'" + path +
                      "': Fortran-ordered arrays are not supported (save with "
                      "np.ascontiguousarray)");
  }
  array.shape = parse_shape(dict_value(header, "shape", path), path);
  // Sizes in checked arithmetic: a shape whose product wraps around 64 bits could otherwise
  // promise exactly the bytes the file holds. The row is checked on its own too, for a shape
  // with no rows.
  std::optional<std::uint64_t> row = array.dtype.itemsize;
  for (std::size_t d = 1; d < array.shape.size() && row; ++d) {
    row = checked_product(*row, array.shape[d]);
  }
  const std::optional<std::uint64_t> expected =
      row ? checked_product(*row, array.shape.empty() ? 1 : array.shape[0]) : std::nullopt;
  if (!expected) {
    throw ConfigError("'" + path + "': .npy header shape " + dict_value(header, "shape", path) +
                      " of " + array.dtype.typestr() +
                      " holds more bytes than 64 bits can count; the file is corrupt");
  }
  const std::size_t data_start = header_start + header_length;
  if (bytes.size() - data_start != *expected) {
    throw ConfigError("'" + path + "' holds " + std::to_string(bytes.size() - data_start) +
                      " data bytes, its header promises " + std::to_string(*expected));
  }
  array.data = bytes.subspan(data_start);
  array.file->check_intact();
  return array;
}

std::int64_t little_endian_integer(const std::uint8_t* p, const DType& dtype) {
  const bool is_signed = dtype.kind == 'i';
  switch (dtype.itemsize) {
    case 1:
      return is_signed ? std::int64_t{static_cast<std::int8_t>(*p)} : std::int64_t{*p};
    case 2:
      return is_signed ? std::int64_t{load_le<std::int16_t>(p)}
                       : std::int64_t{load_le<std::uint16_t>(p)};
    case 4:
      return is_signed ? std::int64_t{load_le<std::int32_t>(p)}
                       : std::int64_t{load_le<std::uint32_t>(p)};
    default:
      return static_cast<std::int64_t>(load_le<std::uint64_t>(p));
  }
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
