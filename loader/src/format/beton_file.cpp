#include "ffcv/format/beton_file.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "ffcv/format/format.hpp"

namespace ffcv {

bool is_beton_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint8_t bytes[kHeaderSize];
  if (!in.read(reinterpret_cast<char*>(bytes), kHeaderSize)) return false;
  const Header header = Header::decode(bytes);
  if (header.version != kFormatVersion || header.num_fields == 0) return false;
  std::error_code error;
  return std::filesystem::file_size(path, error) >= metadata_start(header.num_fields) && !error;
}

}  // namespace ffcv
