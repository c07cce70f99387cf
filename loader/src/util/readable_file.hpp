// Internal: a file opened read-only for the readers of .beton files (MappedFile, the pread range
// reader) and of whole files (source images), with the same checks and messages for all.
#pragma once

#include <cstdint>
#include <string>

namespace ffcv {

struct ReadableFile {
  int fd = -1;  // O_RDONLY | O_CLOEXEC; the caller closes it
  std::uint64_t size = 0;
};

// Throws IoError naming `path` when it cannot be opened or stat'ed, or is not a regular file (a
// directory, a FIFO that would block the open for ever, a device such as /dev/zero that never
// ends): refused by name, never waited on.
ReadableFile open_readable_file(const std::string& path);

}  // namespace ffcv
