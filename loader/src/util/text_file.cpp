#include "ffcv/util/text_file.hpp"

#include <fstream>
#include <iterator>

namespace ffcv {

std::string read_text_if_present(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace ffcv
