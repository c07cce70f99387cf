// Internal: the writer's output, written under a temporary name and renamed when complete.
#pragma once

#include <cstdint>
#include <string>

namespace ffcv {

class TemporaryOutputFile {
 public:
  // Creates "<dir>/.<name>.tmp-XXXXXX" beside `final_path`. Throws IoError.
  explicit TemporaryOutputFile(std::string final_path);
  // Removes the temporary file unless commit() succeeded.
  ~TemporaryOutputFile();
  TemporaryOutputFile(const TemporaryOutputFile&) = delete;
  TemporaryOutputFile& operator=(const TemporaryOutputFile&) = delete;

  // Writes all `size` bytes at absolute `offset`. Throws IoError.
  void write_at(std::uint64_t offset, const void* data, std::uint64_t size);
  // Flushes to disk and renames onto the final path. Throws IoError.
  void commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace ffcv
