#include "readable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ffcv/util/errors.hpp"

namespace ffcv {

ReadableFile open_readable_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path, "open for reading", errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(path, "stat", error);
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd);
    throw IoError(path, "read (it is a directory)", EISDIR);
  }
  return {fd, static_cast<std::uint64_t>(info.st_size)};
}

}  // namespace ffcv
