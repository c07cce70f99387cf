// ProcessCache: the pages an epoch needs, read with pread into this process's own memory in order
// of first use, never holding more than a byte budget, each freed after its last use.
//
// Epoch plan (begin_epoch): one entry per distinct page, in order of first use (first batch, then
// page number), with its remaining-use count; per batch, the indices of its entries. The peak
// memory the schedule needs is checked against the budget before anything is read.
//
// Readers: `reader_threads` threads claim entries strictly in plan order, one at a time, and only
// when the resident bytes (loaded pages plus pages being read) leave room for the next page. So a
// batch's pages never queue behind a later batch's, and the read-ahead fills the budget without
// ever exceeding it. Each page is read whole (up to the end of the file for the last page) into
// an anonymous mapping of its own, published in a dense table of atomic pointers indexed by page
// number that bytes() reads without locking.
//
// acquire(b) waits until each of b's pages is loaded or has failed; release(b) drops one use of
// each of b's pages and unmaps those with none left, which wakes the readers.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "ffcv/errors.hpp"
#include "ffcv/page_source.hpp"
#include "storage_throttle.hpp"

namespace ffcv {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "512 MiB", "1 GiB", "1536 KiB", "1000 bytes": the largest binary unit that divides exactly.
std::string exact_size_text(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

// "12582912 bytes (12.0 MiB)": exact, with an approximate size for reading.
std::string size_text(std::uint64_t bytes) {
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes < 1024) return text;
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (unit < 3 && value >= 1024) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), " (%.1f %s)", value, kUnits[unit]);
  return text + buffer;
}

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", value);
  return buffer;
}

// A file opened read-only, closed on destruction; error() is open's errno when it failed.
class FileDescriptor {
 public:
  explicit FileDescriptor(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), error_(fd_ < 0 ? errno : 0) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int error() const { return error_; }

 private:
  int fd_;
  int error_;
};

// The memory of one cached page: an anonymous private mapping, so that freeing a page gives its
// memory back to the operating system at once rather than to the allocator's free lists.
class PageBuffer {
 public:
  PageBuffer() = default;
  ~PageBuffer() { reset(); }
  PageBuffer(PageBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PageBuffer& operator=(PageBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  // Maps `size` (> 0) bytes. Returns 0, or the errno of the failed mmap.
  int allocate(std::uint64_t size) {
    reset();
    // MAP_POPULATE faults the pages in at once, a little cheaper than faulting during pread.
    void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (data == MAP_FAILED) return errno;
    data_ = static_cast<std::uint8_t*>(data);
    size_ = size;
    return 0;
  }
  void reset() {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }
  std::uint8_t* data() const { return data_; }

 private:
  std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
};

enum class PageState : std::uint8_t { kWaiting, kLoading, kLoaded, kFailed, kFreed };
// kFailed: acquire() threw IoError and dropped the batch's uses itself; a release is optional.
enum class BatchState : std::uint8_t { kWaiting, kAcquired, kFailed, kReleased };

struct PageEntry {
  std::uint64_t page = 0;
  std::uint64_t length = 0;  // bytes read and held: the page size, less for the file's last page
  std::uint64_t remaining_uses = 0;  // batches not yet released that read this page
  PageState state = PageState::kWaiting;
  PageBuffer buffer;  // while kLoaded
  int error = 0;      // while kFailed: errno and what was being done, for IoError
  std::string error_action;
};

// What one reader thread got for one page.
struct LoadResult {
  bool interrupted = false;  // end_epoch stopped the throttle's wait; nothing was read
  PageBuffer buffer;
  int error = 0;
  std::string error_action;
  std::uint64_t bytes_read = 0;
  std::uint64_t read_calls = 0;
  double seconds = 0;
};

class ProcessCache final : public PageSource {
 public:
  ProcessCache(const std::string& path, std::uint64_t page_size, ProcessCacheOptions options);
  ~ProcessCache() override;

  void begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                   std::uint64_t max_batches_in_flight) override;
  void acquire(std::uint64_t batch) override;
  void release(std::uint64_t batch) override;
  void end_epoch() override;
  void cancel() override;
  std::span<const std::uint8_t> bytes(std::uint64_t ptr, std::uint64_t size) const override;
  PageSourceStats stats() const override;
  std::string describe() const override;

 private:
  // The part of the file page `page` covers (page_size_ for pages beyond the end of the file).
  std::uint64_t page_length(std::uint64_t page) const;
  // Builds the epoch's entries and per-batch lists; throws ConfigError if the budget is short.
  void plan_epoch(std::vector<std::vector<std::uint64_t>>& batch_pages,
                  std::uint64_t max_batches_in_flight, std::vector<PageEntry>& entries,
                  std::vector<std::vector<std::uint32_t>>& batch_entries) const;
  // Stops and joins the readers, then frees every page. Caller holds lifecycle_mutex_.
  void stop_and_clear();
  void reader_loop();
  LoadResult load_page(std::uint64_t page, std::uint64_t length);
  // Unpublishes and unmaps a loaded page. Caller holds mutex_.
  void free_entry(PageEntry& entry);
  // Drops one use of each of the batch's pages, freeing those left unused. Caller holds mutex_.
  void drop_uses(std::uint64_t batch);
  std::string batch_error(const char* what, std::uint64_t batch) const;

  const std::string path_;
  const std::uint64_t page_size_;
  const ProcessCacheOptions options_;
  ReadThrottle throttle_;
  FileDescriptor fd_;
  std::uint64_t file_size_ = 0;
  std::uint64_t num_file_pages_ = 0;
  // page number -> its bytes while resident, else null. Written under mutex_, read lock-free.
  std::unique_ptr<std::atomic<const std::uint8_t*>[]> table_;

  std::mutex lifecycle_mutex_;  // serializes begin_epoch and end_epoch (which join threads)
  std::vector<std::thread> readers_;

  mutable std::mutex mutex_;              // guards everything below
  std::condition_variable readers_wake_;  // budget was freed, or the readers must stop
  std::condition_variable page_settled_;  // a page was loaded or failed, or the epoch ended
  bool epoch_active_ = false;
  bool stop_ = false;
  bool cancelled_ = false;   // cancel(): acquire() throws until the next begin_epoch
  std::uint64_t epoch_ = 0;  // changes whenever an epoch ends
  std::vector<PageEntry> entries_;
  std::vector<std::vector<std::uint32_t>> batch_entries_;
  std::vector<BatchState> batch_state_;
  std::size_t next_entry_ = 0;  // the next entry a reader claims
  std::uint64_t resident_bytes_ = 0;
  PageSourceStats stats_;  // resident_bytes_ is kept apart
};

ProcessCache::ProcessCache(const std::string& path, std::uint64_t page_size,
                           ProcessCacheOptions options)
    : path_(path),
      page_size_(page_size),
      options_(options),
      throttle_(options.throttle),
      fd_(path) {
  if (page_size_ == 0) throw ConfigError(path + ": the page size must be positive");
  if (options_.reader_threads < 1) {
    throw ConfigError("process cache: reader_threads must be at least 1 (got " +
                      std::to_string(options_.reader_threads) + ")");
  }
  if (fd_.get() < 0) throw IoError(path, "open for reading", fd_.error());
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0) throw IoError(path, "stat", errno);
  if (S_ISDIR(info.st_mode)) throw IoError(path, "read (it is a directory)", EISDIR);
  file_size_ = static_cast<std::uint64_t>(info.st_size);
  num_file_pages_ = file_size_ / page_size_ + (file_size_ % page_size_ != 0 ? 1 : 0);
  // Value-initialized: every page starts absent.
  table_ = std::make_unique<std::atomic<const std::uint8_t*>[]>(num_file_pages_);
}

ProcessCache::~ProcessCache() {
  std::lock_guard life(lifecycle_mutex_);
  stop_and_clear();
}

std::uint64_t ProcessCache::page_length(std::uint64_t page) const {
  if (page >= num_file_pages_) return page_size_;
  return std::min(page_size_, file_size_ - page * page_size_);
}

std::string ProcessCache::batch_error(const char* what, std::uint64_t batch) const {
  return "process cache: " + std::string(what) + "(" + std::to_string(batch) + ")";
}

void ProcessCache::plan_epoch(std::vector<std::vector<std::uint64_t>>& batch_pages,
                              std::uint64_t max_batches_in_flight, std::vector<PageEntry>& entries,
                              std::vector<std::vector<std::uint32_t>>& batch_entries) const {
  const std::uint64_t num_batches = batch_pages.size();
  // Entries in order of first use: batches in order, pages in order within a batch.
  std::unordered_map<std::uint64_t, std::uint32_t> entry_of_page;
  std::vector<std::uint64_t> last_use;
  std::vector<std::uint64_t> first_use;
  batch_entries.resize(num_batches);
  for (std::uint64_t b = 0; b < num_batches; ++b) {
    std::vector<std::uint64_t>& pages = batch_pages[b];
    if (!std::is_sorted(pages.begin(), pages.end()) ||
        std::adjacent_find(pages.begin(), pages.end()) != pages.end()) {
      std::sort(pages.begin(), pages.end());
      pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    }
    batch_entries[b].reserve(pages.size());
    for (const std::uint64_t page : pages) {
      const auto [it, inserted] =
          entry_of_page.try_emplace(page, static_cast<std::uint32_t>(entries.size()));
      if (inserted) {
        if (entries.size() == UINT32_MAX) {
          throw ConfigError("process cache: too many distinct pages in one epoch");
        }
        PageEntry& entry = entries.emplace_back();
        entry.page = page;
        entry.length = page_length(page);
        first_use.push_back(b);
        last_use.push_back(b);
      }
      ++entries[it->second].remaining_uses;
      last_use[it->second] = b;
      batch_entries[b].push_back(it->second);
    }
  }

  // While batch b is acquired, the pages resident are at most those first used at or before b
  // that some batch in [b - K, b] still needs (K = max_batches_in_flight, the batches before b
  // the caller may still hold): the pages whose [first_use, last_use + K] covers b. Readers
  // claim pages in order of first use, so nothing read for a later batch is resident while b
  // waits. The budget must hold the peak of that sum over all b.
  const std::uint64_t k = max_batches_in_flight;
  std::vector<std::uint64_t> bytes_starting(num_batches + 1, 0);
  std::vector<std::uint64_t> bytes_ending(num_batches + 1, 0);
  std::vector<std::uint64_t> pages_starting(num_batches + 1, 0);
  std::vector<std::uint64_t> pages_ending(num_batches + 1, 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::uint64_t end = std::min(num_batches, last_use[i] + std::min(k, num_batches) + 1);
    bytes_starting[first_use[i]] += entries[i].length;
    bytes_ending[end] += entries[i].length;
    ++pages_starting[first_use[i]];
    ++pages_ending[end];
  }
  std::uint64_t bytes = 0, pages = 0, peak_bytes = 0, peak_pages = 0, peak_batch = 0;
  for (std::uint64_t b = 0; b < num_batches; ++b) {
    bytes += bytes_starting[b];
    bytes -= bytes_ending[b];
    pages += pages_starting[b];
    pages -= pages_ending[b];
    if (bytes > peak_bytes) {
      peak_bytes = bytes;
      peak_pages = pages;
      peak_batch = b;
    }
  }
  if (peak_bytes > options_.budget_bytes) {
    throw ConfigError(
        path_ + ": the process cache's budget is too small for this epoch's order: it needs " +
        size_text(peak_bytes) + " of resident pages (" + std::to_string(peak_pages) + " pages of " +
        std::to_string(page_size_) + " bytes at batch " + std::to_string(peak_batch) +
        ", counting the pages of up to " + std::to_string(k) +
        " earlier batches still in flight), but the budget is " + size_text(options_.budget_bytes) +
        ". Use a budget of at least " + size_text(peak_bytes) +
        ", the QUASI_RANDOM order (it keeps few pages in use at a time), or the mmap page "
        "source; a RANDOM order over a large file typically needs about the whole file, " +
        size_text(file_size_) + " here");
  }
}

void ProcessCache::begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                               std::uint64_t max_batches_in_flight) {
  std::lock_guard life(lifecycle_mutex_);
  stop_and_clear();
  if (max_batches_in_flight == 0) {
    throw ConfigError("process cache: max_batches_in_flight must be at least 1");
  }
  std::vector<PageEntry> entries;
  std::vector<std::vector<std::uint32_t>> batch_entries;
  plan_epoch(batch_pages, max_batches_in_flight, entries, batch_entries);
  const std::size_t num_readers =
      std::min(entries.size(), static_cast<std::size_t>(options_.reader_threads));
  {
    std::lock_guard lock(mutex_);
    entries_ = std::move(entries);
    batch_state_.assign(batch_entries.size(), BatchState::kWaiting);
    batch_entries_ = std::move(batch_entries);
    next_entry_ = 0;
    stop_ = false;
    cancelled_ = false;
    epoch_active_ = true;
  }
  try {
    readers_.reserve(num_readers);
    for (std::size_t i = 0; i < num_readers; ++i) readers_.emplace_back([this] { reader_loop(); });
  } catch (...) {
    stop_and_clear();
    throw;
  }
}

void ProcessCache::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  page_settled_.notify_all();
}

void ProcessCache::end_epoch() {
  std::lock_guard life(lifecycle_mutex_);
  stop_and_clear();
}

void ProcessCache::stop_and_clear() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    epoch_active_ = false;
    ++epoch_;
  }
  throttle_.stop();
  readers_wake_.notify_all();
  page_settled_.notify_all();
  for (std::thread& reader : readers_) reader.join();
  readers_.clear();
  throttle_.reset();

  std::lock_guard lock(mutex_);
  for (PageEntry& entry : entries_) {
    if (entry.state == PageState::kLoaded) free_entry(entry);
  }
  entries_.clear();
  batch_entries_.clear();
  batch_state_.clear();
  next_entry_ = 0;
}

void ProcessCache::free_entry(PageEntry& entry) {
  table_[entry.page].store(nullptr, std::memory_order_release);
  entry.buffer.reset();
  entry.state = PageState::kFreed;
  resident_bytes_ -= entry.length;
  ++stats_.pages_freed;
}

void ProcessCache::reader_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (stop_ || next_entry_ >= entries_.size()) return;
    const std::size_t index = next_entry_;
    const std::uint64_t page = entries_[index].page;
    const std::uint64_t length = entries_[index].length;
    if (resident_bytes_ + length > options_.budget_bytes) {
      readers_wake_.wait(lock);
      continue;
    }
    ++next_entry_;
    entries_[index].state = PageState::kLoading;
    resident_bytes_ += length;
    stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, resident_bytes_);
    lock.unlock();

    LoadResult result = load_page(page, length);

    lock.lock();
    stats_.bytes_read += result.bytes_read;
    stats_.read_calls += result.read_calls;
    stats_.storage_seconds += result.seconds;
    if (stop_ || result.interrupted) {
      resident_bytes_ -= length;  // result.buffer is unmapped on return
      return;
    }
    PageEntry& entry = entries_[index];
    if (result.error == 0) {
      entry.buffer = std::move(result.buffer);
      entry.state = PageState::kLoaded;
      table_[page].store(entry.buffer.data(), std::memory_order_release);
      ++stats_.pages_loaded;
      if (entry.remaining_uses == 0) {
        free_entry(entry);
        readers_wake_.notify_all();
      }
    } else {
      entry.state = PageState::kFailed;
      entry.error = result.error;
      entry.error_action = std::move(result.error_action);
      resident_bytes_ -= length;
      readers_wake_.notify_all();
    }
    page_settled_.notify_all();
  }
}

LoadResult ProcessCache::load_page(std::uint64_t page, std::uint64_t length) {
  LoadResult result;
  const std::uint64_t offset = page * page_size_;
  const std::string where = "read page " + std::to_string(page) + " at byte offset " +
                            std::to_string(offset) + " (" + std::to_string(length) + " bytes)";
  if (page >= num_file_pages_) {
    result.error = EIO;
    result.error_action =
        where + ": it lies beyond the end of the file (" + std::to_string(file_size_) + " bytes)";
    return result;
  }
  const Clock::time_point start = Clock::now();
  if (!throttle_.wait_for_read(length)) {
    result.interrupted = true;
    result.seconds = seconds_since(start);
    return result;
  }
  if (const int error = result.buffer.allocate(length); error != 0) {
    result.error = error;
    result.error_action = "allocate " + std::to_string(length) + " bytes to " + where;
    result.seconds = seconds_since(start);
    return result;
  }
  std::uint64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd_.get(), result.buffer.data() + done, length - done,
                              static_cast<off_t>(offset + done));
    ++result.read_calls;
    if (n < 0) {
      if (errno == EINTR) continue;
      result.error = errno;
      result.error_action = where;
      break;
    }
    if (n == 0) {
      result.error = EIO;
      result.error_action = where + ": the file ends at byte offset " +
                            std::to_string(offset + done) + ", it is shorter than when opened (" +
                            std::to_string(file_size_) + " bytes)";
      break;
    }
    done += static_cast<std::uint64_t>(n);
    result.bytes_read += static_cast<std::uint64_t>(n);
  }
  if (result.error != 0) result.buffer.reset();
  result.seconds = seconds_since(start);
  return result;
}

void ProcessCache::acquire(std::uint64_t batch) {
  std::unique_lock lock(mutex_);
  if (!epoch_active_) throw ConfigError(batch_error("acquire", batch) + " with no epoch begun");
  if (batch >= batch_entries_.size()) {
    throw ConfigError(batch_error("acquire", batch) + " outside the epoch's " +
                      std::to_string(batch_entries_.size()) + " batches");
  }
  if (batch_state_[batch] != BatchState::kWaiting) {
    throw ConfigError(batch_error("acquire", batch) + ": the batch was already acquired");
  }
  batch_state_[batch] = BatchState::kAcquired;
  const std::uint64_t epoch = epoch_;
  // Pages only ever go from waiting/loading to loaded/failed within an epoch, so the scan can
  // resume where it stopped.
  std::size_t settled = 0;
  const auto all_settled = [&] {
    if (epoch_ != epoch || cancelled_) return true;
    const std::vector<std::uint32_t>& indices = batch_entries_[batch];
    while (settled < indices.size()) {
      const PageState state = entries_[indices[settled]].state;
      if (state != PageState::kLoaded && state != PageState::kFailed) return false;
      ++settled;
    }
    return true;
  };
  if (!all_settled()) {
    const Clock::time_point start = Clock::now();
    page_settled_.wait(lock, all_settled);
    stats_.acquire_wait_seconds += seconds_since(start);
  }
  if (epoch_ != epoch || cancelled_) {
    throw ConfigError(batch_error("acquire", batch) + ": the epoch ended while waiting");
  }
  for (const std::uint32_t index : batch_entries_[batch]) {
    const PageEntry& entry = entries_[index];
    if (entry.state == PageState::kFailed) {
      // Release the batch now: a caller that gives up on it must not pin its pages for the rest
      // of the epoch, which could leave the readers waiting for budget for ever.
      IoError error(path_, entry.error_action, entry.error);
      drop_uses(batch);
      batch_state_[batch] = BatchState::kFailed;
      throw error;
    }
  }
}

void ProcessCache::release(std::uint64_t batch) {
  std::lock_guard lock(mutex_);
  if (!epoch_active_) return;  // the epoch ended, and freed its pages
  if (batch >= batch_entries_.size()) {
    throw ConfigError(batch_error("release", batch) + " outside the epoch's " +
                      std::to_string(batch_entries_.size()) + " batches");
  }
  const BatchState state = batch_state_[batch];
  if (state != BatchState::kAcquired && state != BatchState::kFailed) {
    throw ConfigError(batch_error("release", batch) + ": the batch is not acquired");
  }
  batch_state_[batch] = BatchState::kReleased;
  if (state == BatchState::kAcquired) drop_uses(batch);
}

void ProcessCache::drop_uses(std::uint64_t batch) {
  bool freed = false;
  for (const std::uint32_t index : batch_entries_[batch]) {
    PageEntry& entry = entries_[index];
    if (--entry.remaining_uses == 0 && entry.state == PageState::kLoaded) {
      free_entry(entry);
      freed = true;
    }
  }
  if (freed) readers_wake_.notify_all();
}

std::span<const std::uint8_t> ProcessCache::bytes(std::uint64_t ptr, std::uint64_t size) const {
  const std::uint64_t page = ptr / page_size_;
  const std::uint64_t offset = ptr - page * page_size_;
  if (page >= num_file_pages_ || offset > page_length(page) || size > page_length(page) - offset) {
    const bool beyond_file = ptr > file_size_ || size > file_size_ - ptr;
    throw FormatError(path_,
                      "bytes [" + std::to_string(ptr) + ", " + std::to_string(ptr + size) +
                          (beyond_file ? ") lie beyond the end of the file (" +
                                             std::to_string(file_size_) + " bytes)"
                                       : ") cross the end of page " + std::to_string(page)),
                      ptr);
  }
  const std::uint8_t* data = table_[page].load(std::memory_order_acquire);
  if (data == nullptr) {
    throw ConfigError(path_ + ": page " + std::to_string(page) +
                      " is not in the process cache (bytes() outside an acquired, unreleased "
                      "batch that reads it)");
  }
  return {data + offset, size};
}

PageSourceStats ProcessCache::stats() const {
  std::lock_guard lock(mutex_);
  PageSourceStats stats = stats_;
  stats.resident_bytes = resident_bytes_;
  return stats;
}

std::string ProcessCache::describe() const {
  const int readers = options_.reader_threads;
  std::string text = "process cache (budget " + exact_size_text(options_.budget_bytes) + ", " +
                     std::to_string(readers) + (readers == 1 ? " reader" : " readers");
  if (options_.throttle.latency_seconds > 0) {
    text += ", latency " + number_text(options_.throttle.latency_seconds * 1e3) + " ms";
  }
  if (options_.throttle.bandwidth_bytes_per_s > 0) {
    text += ", " + number_text(options_.throttle.bandwidth_bytes_per_s / 1e6) + " MB/s";
  }
  return text + ")";
}

}  // namespace

std::unique_ptr<PageSource> make_process_cache(const std::string& path, std::uint64_t page_size,
                                               ProcessCacheOptions options) {
  return std::make_unique<ProcessCache>(path, page_size, options);
}

}  // namespace ffcv
