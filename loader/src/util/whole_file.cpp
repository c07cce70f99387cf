#include "ffcv/util/whole_file.hpp"

#include <unistd.h>

#include <cerrno>

#include "ffcv/util/errors.hpp"
#include "readable_file.hpp"

namespace ffcv {

std::vector<std::uint8_t> read_whole_file(const std::string& path) {
  const ReadableFile file = open_readable_file(path);
  const int fd = file.fd;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(file.size));
  // Reads to the end, not only the size fstat gave: a file that grew meanwhile is read whole
  // all the same (the rest through a chunk), and one that shrank ends early.
  std::uint8_t chunk[16384];
  std::size_t done = 0;
  for (;;) {
    const bool in_size = done < bytes.size();
    std::uint8_t* target = in_size ? bytes.data() + done : chunk;
    const std::size_t room = in_size ? bytes.size() - done : sizeof chunk;
    const ssize_t got = ::read(fd, target, room);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      throw IoError(path, "read", error);
    }
    if (got == 0) break;
    if (!in_size) bytes.insert(bytes.end(), chunk, chunk + got);
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace ffcv
