#include "readable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "ffcv/util/errors.hpp"

namespace ffcv {

namespace {

// What a file that is not a regular file is, in words; nullptr for a regular file.
const char* irregular_kind(mode_t mode) {
  if (S_ISREG(mode)) return nullptr;
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

ReadableFile open_readable_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer for ever; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
  if (const char* kind = irregular_kind(info.st_mode)) {
    ::close(fd);
    throw IoError(path, "read", std::string("it is ") + kind + ", not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(path, "open for reading", error);
  }
  return {fd, static_cast<std::uint64_t>(info.st_size)};
}

}  // namespace ffcv
