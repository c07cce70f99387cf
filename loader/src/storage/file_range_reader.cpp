// A RangeReader over a local file: pread on one descriptor, shared by all threads (pread keeps
// no file position, so concurrent reads need no lock).

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "ffcv/util/errors.hpp"
#include "range_reader_kinds.hpp"
#include "util/readable_file.hpp"

namespace ffcv {
namespace {

class FileRangeReader final : public RangeReader {
 public:
  explicit FileRangeReader(const std::string& path) : path_(path) {
    const ReadableFile file = open_readable_file(path);
    fd_ = file.fd;
    size_ = file.size;
  }
  ~FileRangeReader() override { ::close(fd_); }
  FileRangeReader(const FileRangeReader&) = delete;
  FileRangeReader& operator=(const FileRangeReader&) = delete;

  const std::string& location() const override { return path_; }
  std::uint64_t size() const override { return size_; }
  bool remote() const override { return false; }
  void interrupt() override { interrupted_.store(true); }
  void drop_os_cache() override {
    if (const int error = ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED); error != 0) {
      throw IoError(path_, "drop its pages from the OS page cache (posix_fadvise)", error);
    }
  }
  void resume() override { interrupted_.store(false); }

  bool read(std::uint64_t offset, std::span<std::uint8_t> out) override {
    const std::string range =
        "read bytes [" + std::to_string(offset) + ", " + std::to_string(offset + out.size()) + ")";
    std::uint64_t done = 0;
    while (done < out.size()) {
      if (interrupted_.load(std::memory_order_relaxed)) return false;
      const ssize_t n =
          ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw IoError(path_, range, errno);
      }
      if (n == 0) {
        throw IoError(path_, range,
                      "the file ends at byte offset " + std::to_string(offset + done) +
                          ", it is shorter than when opened (" + std::to_string(size_) + " bytes)");
      }
      done += static_cast<std::uint64_t>(n);
    }
    return true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::atomic<bool> interrupted_{false};
};

}  // namespace

std::unique_ptr<RangeReader> open_file_range_reader(const std::string& path) {
  return std::make_unique<FileRangeReader>(path);
}

}  // namespace ffcv
