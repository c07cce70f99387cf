#include "ffcv/storage/file_view.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <vector>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/mapped_file.hpp"

namespace ffcv {

class FileView::Local {
 public:
  explicit Local(const std::string& path) : file(path) {}
  MappedFile file;
};

class FileView::Remote {
 public:
  static constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;

  Remote(const std::string& url, const HttpOptions& http)
      : storage_(open_range_reader(url, http)), size_(storage_->size()) {
    if (size_ == 0) return;
    // Reserved, not committed: only the chunks fetched become memory.
    void* image = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (image == MAP_FAILED) {
      throw IoError(storage_->location(),
                    "reserve " + std::to_string(size_) + " bytes of address space", errno);
    }
    image_ = static_cast<std::uint8_t*>(image);
    fetched_.assign((size_ + kChunk - 1) / kChunk, false);
  }
  ~Remote() {
    if (image_ != nullptr) ::munmap(image_, size_);
  }
  Remote(const Remote&) = delete;
  Remote& operator=(const Remote&) = delete;

  const std::string& location() const { return storage_->location(); }
  std::uint64_t size() const { return size_; }

  std::span<const std::uint8_t> bytes(std::uint64_t offset, std::uint64_t size) {
    if (size == 0) return {image_ != nullptr ? image_ + offset : nullptr, 0};
    std::lock_guard lock(mutex_);
    const std::uint64_t first = offset / kChunk;
    const std::uint64_t last = (offset + size - 1) / kChunk;
    // One request per run of chunks not fetched yet.
    for (std::uint64_t chunk = first; chunk <= last;) {
      if (fetched_[chunk]) {
        ++chunk;
        continue;
      }
      std::uint64_t end = chunk;
      while (end <= last && !fetched_[end]) ++end;
      const std::uint64_t begin_byte = chunk * kChunk;
      const std::uint64_t end_byte = std::min(size_, end * kChunk);
      if (!storage_->read(begin_byte, {image_ + begin_byte, end_byte - begin_byte})) {
        throw IoError(
            location(),
            "read bytes [" + std::to_string(begin_byte) + ", " + std::to_string(end_byte) + ")",
            "the read was interrupted");
      }
      for (std::uint64_t c = chunk; c < end; ++c) fetched_[c] = true;
      chunk = end;
    }
    return {image_ + offset, size};
  }

 private:
  std::unique_ptr<RangeReader> storage_;
  std::uint64_t size_;
  std::uint8_t* image_ = nullptr;
  std::mutex mutex_;
  std::vector<bool> fetched_;  // per chunk
};

FileView::FileView(const std::string& location, const HttpOptions& http) {
  check_supported_scheme(location);
  if (is_url(location)) {
    remote_ = std::make_unique<Remote>(location, http);
  } else {
    local_ = std::make_unique<Local>(location);
  }
}

FileView::~FileView() = default;

const std::string& FileView::location() const {
  return local_ ? local_->file.path() : remote_->location();
}

std::uint64_t FileView::size() const { return local_ ? local_->file.size() : remote_->size(); }

bool FileView::remote() const { return remote_ != nullptr; }

std::span<const std::uint8_t> FileView::bytes(std::uint64_t offset, std::uint64_t size) const {
  if (local_) return local_->file.bytes().subspan(offset, size);
  return remote_->bytes(offset, size);
}

void FileView::check_intact() const {
  if (local_) local_->file.check_intact();
}

}  // namespace ffcv
