// A read-only memory map of a whole file (RAII).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ffcv {

class MappedFile {
 public:
  // Maps `path` read-only. Throws IoError when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace ffcv
