#include "ffcv/util/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ffcv/util/errors.hpp"
#include "mapping_guard.hpp"
#include "readable_file.hpp"

namespace ffcv {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const ReadableFile file = open_readable_file(path);
  fd_ = file.fd;
  size_ = file.size;
  if (size_ > 0) {
    void* data = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (data == MAP_FAILED) {
      const int error = errno;
      ::close(fd_);
      throw IoError(path, "memory-map", error);
    }
    data_ = static_cast<const std::uint8_t*>(data);
    guard_slot_ = mapping_guard::add(data_, size_);
  }
}

MappedFile::~MappedFile() {
  mapping_guard::remove(guard_slot_);
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::drop_os_cache() const {
  if (data_ != nullptr && ::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_DONTNEED) != 0) {
    throw IoError(path_, "drop its pages from memory (madvise)", errno);
  }
  if (const int error = ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED); error != 0) {
    throw IoError(path_, "drop its pages from the OS page cache (posix_fadvise)", error);
  }
}

void MappedFile::check_intact() const {
  struct stat info {};
  const bool shrank = ::fstat(fd_, &info) == 0 && static_cast<std::uint64_t>(info.st_size) < size_;
  if (shrank) {
    throw FormatError(path_, "the file shrank to " + std::to_string(info.st_size) +
                                 " bytes while it was being read (it had " + std::to_string(size_) +
                                 " when opened); was it rewritten?");
  }
  if (mapping_guard::faulted(guard_slot_)) {
    throw FormatError(path_,
                      "part of the file could not be read while it was mapped (it was truncated "
                      "while being read); was it rewritten?");
  }
}

}  // namespace ffcv
