// A read-only memory map of a whole file (RAII).
//
// A file truncated while mapped would kill the process with SIGBUS on the first read of a page
// past its new end. A MappedFile instead reads zeros there (see src/util/mapping_guard.hpp) and
// check_intact() reports the change: call it after using bytes() and before trusting what was
// read. It is cheap (an atomic load and an fstat) and thread-safe.
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

  // Throws FormatError naming the file when it shrank since it was mapped, or when a read of
  // the mapping faulted (its pages then read as zeros, so whatever was read is not the file).
  void check_intact() const;

  // Drops the file's pages from this mapping and, where nothing else maps them, from the OS
  // page cache (madvise + posix_fadvise DONTNEED), so that the next reads come from storage: a
  // cold start, on purpose. The mapping stays valid. Throws IoError when the kernel refuses.
  void drop_os_cache() const;

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
  int fd_ = -1;
  int guard_slot_ = -1;
};

}  // namespace ffcv
