// MmapSource: the whole file memory-mapped; the OS page cache does all the caching. The epoch
// protocol only keeps the same bookkeeping as ProcessCache, so misuse shows up in both modes.

#include <mutex>
#include <string>

#include "ffcv/storage/page_source.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/mapped_file.hpp"

namespace ffcv {
namespace {

class MmapSource final : public PageSource {
 public:
  MmapSource(const std::string& path, std::uint64_t page_size) : file_(path) {
    if (page_size == 0) throw ConfigError(path + ": the page size must be positive");
  }

  void begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                   std::uint64_t max_batches_in_flight) override {
    if (max_batches_in_flight == 0) {
      throw ConfigError("page source: max_batches_in_flight must be at least 1");
    }
    std::lock_guard lock(mutex_);
    batch_state_.assign(batch_pages.size(), BatchState::kWaiting);
    epoch_active_ = true;
  }

  void acquire(std::uint64_t batch) override {
    std::lock_guard lock(mutex_);
    if (!epoch_active_) throw ConfigError(batch_error("acquire", batch) + " with no epoch begun");
    check_batch("acquire", batch);
    if (batch_state_[batch] != BatchState::kWaiting) {
      throw ConfigError(batch_error("acquire", batch) + ": the batch was already acquired");
    }
    batch_state_[batch] = BatchState::kAcquired;
  }

  void release(std::uint64_t batch) override {
    std::lock_guard lock(mutex_);
    if (!epoch_active_) return;
    check_batch("release", batch);
    if (batch_state_[batch] != BatchState::kAcquired) {
      throw ConfigError(batch_error("release", batch) + ": the batch is not acquired");
    }
    batch_state_[batch] = BatchState::kReleased;
  }

  void cancel() override {}  // acquire() never waits

  void end_epoch() override {
    std::lock_guard lock(mutex_);
    epoch_active_ = false;
    batch_state_.clear();
  }

  std::span<const std::uint8_t> bytes(std::uint64_t ptr, std::uint64_t size) const override {
    const std::uint64_t file_size = file_.size();
    if (ptr > file_size || size > file_size - ptr) {
      throw FormatError(file_.path(),
                        "bytes [" + std::to_string(ptr) + ", " + std::to_string(ptr + size) +
                            ") lie beyond the end of the file (" + std::to_string(file_size) +
                            " bytes)",
                        ptr);
    }
    return file_.bytes().subspan(ptr, size);
  }

  PageSourceStats stats() const override { return {}; }
  void check_intact() const override { file_.check_intact(); }
  void drop_os_cache() override { file_.drop_os_cache(); }
  std::string describe() const override { return "mmap"; }

 private:
  enum class BatchState : std::uint8_t { kWaiting, kAcquired, kReleased };

  static std::string batch_error(const char* what, std::uint64_t batch) {
    return "mmap page source: " + std::string(what) + "(" + std::to_string(batch) + ")";
  }
  // Caller holds mutex_.
  void check_batch(const char* what, std::uint64_t batch) const {
    if (batch >= batch_state_.size()) {
      throw ConfigError(batch_error(what, batch) + " outside the epoch's " +
                        std::to_string(batch_state_.size()) + " batches");
    }
  }

  MappedFile file_;
  std::mutex mutex_;  // guards the bookkeeping below; bytes() needs no lock
  bool epoch_active_ = false;
  std::vector<BatchState> batch_state_;
};

}  // namespace

std::unique_ptr<PageSource> make_mmap_source(const std::string& path, std::uint64_t page_size) {
  check_supported_scheme(path);
  if (is_url(path)) {
    throw ConfigError(url_without_password(path) +
                      ": a URL cannot be memory-mapped; use the process cache");
  }
  return std::make_unique<MmapSource>(path, page_size);
}

}  // namespace ffcv
