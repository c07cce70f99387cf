// FuzzInputFile: a fuzz input as a file that the code under test opens by path, without touching
// the disk: an in-memory file (memfd) reused for every input, named by /proc/self/fd/N.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace ffcv::fuzz {

class FuzzInputFile {
 public:
  explicit FuzzInputFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~FuzzInputFile() { ::close(fd_); }
  FuzzInputFile(const FuzzInputFile&) = delete;
  FuzzInputFile& operator=(const FuzzInputFile&) = delete;

  // Replaces the file's contents with `size` bytes at `data`; returns its path.
  const std::string& hold(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t written = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (written <= 0) std::abort();
      done += static_cast<std::size_t>(written);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace ffcv::fuzz
