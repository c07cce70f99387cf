// Internal: a file opened read-only for the readers of .beton files (MappedFile, the pread range
// reader), with the same checks and messages for both.
#pragma once

#include <cstdint>
#include <string>

namespace ffcv {

struct ReadableFile {
  int fd = -1;  // O_RDONLY | O_CLOEXEC; the caller closes it
  std::uint64_t size = 0;
};

// Throws IoError naming `path` when it cannot be opened or stat'ed, or is a directory.
ReadableFile open_readable_file(const std::string& path);

}  // namespace ffcv
