#include "ffcv/format/beton_file.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "ffcv/format/format.hpp"

namespace ffcv {

std::optional<Header> read_beton_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint8_t bytes[kHeaderSize];
  if (!in.read(reinterpret_cast<char*>(bytes), kHeaderSize)) return std::nullopt;
  const Header header = Header::decode(bytes);
  if (header.version != kFormatVersion) return std::nullopt;
  return header;
}

bool is_beton_file(const std::string& path) {
  const std::optional<Header> header = read_beton_header(path);
  if (!header || header->num_fields == 0) return false;
  std::error_code error;
  return std::filesystem::file_size(path, error) >= metadata_start(header->num_fields) && !error;
}

bool replaceable_without_force(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error) &&
      std::filesystem::file_size(path, error) == 0 && !error) {
    return true;
  }
  return is_beton_file(path);
}

}  // namespace ffcv
