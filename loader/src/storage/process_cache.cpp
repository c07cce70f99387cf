// ProcessCache: the pages an epoch needs, read from storage (a RangeReader: a local file or a URL)
// into this process's own memory in order of first use, never holding more than a byte budget,
// each freed after its last use.
//
// Epoch plan (begin_epoch, ffcv/storage/epoch_plan.hpp): one entry per distinct page, in order of
// first use, with its remaining-use count; per batch, the indices of its entries. The peak memory
// the schedule needs is checked against the budget before anything is read.
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

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include "ffcv/storage/epoch_plan.hpp"
#include "ffcv/storage/page_source.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "ffcv/util/thread_group.hpp"
#include "storage_throttle.hpp"

namespace ffcv {
namespace {

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", value);
  return buffer;
}

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
  PageBuffer buffer;         // while kLoaded
  std::exception_ptr error;  // while kFailed: the IoError (or FormatError) of the read
};

// What one reader thread got for one page.
struct LoadResult {
  bool interrupted = false;  // end_epoch stopped the throttle's wait; nothing was read
  PageBuffer buffer;
  std::exception_ptr error;
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
  void drop_os_cache() override { storage_->drop_os_cache(); }
  std::string describe() const override;

 private:
  // The part of the file page `page` covers (page_size_ for pages beyond the end of the file).
  std::uint64_t page_length(std::uint64_t page) const;
  // Throws ConfigError when the plan needs more than the budget.
  void check_budget(const EpochPlan& plan, std::uint64_t max_batches_in_flight) const;
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
  std::unique_ptr<RangeReader> storage_;
  std::uint64_t file_size_ = 0;
  std::uint64_t num_file_pages_ = 0;
  // page number -> its bytes while resident, else null. Written under mutex_, read lock-free.
  std::unique_ptr<std::atomic<const std::uint8_t*>[]> table_;

  std::mutex lifecycle_mutex_;  // serializes begin_epoch and end_epoch (which join threads)
  ThreadGroup readers_;

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
    : path_(url_without_password(path)),
      page_size_(page_size),
      options_(options),
      throttle_(options.throttle) {
  if (page_size_ == 0) throw ConfigError(path_ + ": the page size must be positive");
  if (options_.reader_threads < 1) {
    throw ConfigError("process cache: reader_threads must be at least 1 (got " +
                      std::to_string(options_.reader_threads) + ")");
  }
  storage_ = open_range_reader(path, options_.http);
  file_size_ = storage_->size();
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

void ProcessCache::check_budget(const EpochPlan& plan, std::uint64_t max_batches_in_flight) const {
  if (plan.peak_bytes <= options_.budget_bytes) return;
  throw CacheBudgetError(
      path_ + ": the process cache's budget is too small for this epoch's order: it needs " +
          bytes_and_size_text(plan.peak_bytes) + " of resident pages (" +
          std::to_string(plan.peak_pages) + " pages of " + std::to_string(page_size_) +
          " bytes at batch " + std::to_string(plan.peak_batch) + ", counting the pages of up to " +
          std::to_string(max_batches_in_flight) +
          " earlier batches still in flight), but the budget is " +
          bytes_and_size_text(options_.budget_bytes) + ". Use a budget of at least " +
          bytes_and_size_text(plan.peak_bytes) +
          ", the QUASI_RANDOM order with a window of a few pages (it keeps few pages in use at a "
          "time)" +
          (storage_->remote() ? std::string() : std::string(", or the mmap page source")) +
          "; a RANDOM order over a large file typically needs about the whole file, " +
          bytes_and_size_text(file_size_) + " here",
      plan.peak_bytes);
}

void ProcessCache::begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                               std::uint64_t max_batches_in_flight) {
  std::lock_guard life(lifecycle_mutex_);
  stop_and_clear();
  if (max_batches_in_flight == 0) {
    throw ConfigError("process cache: max_batches_in_flight must be at least 1");
  }
  EpochPlan plan = plan_epoch(batch_pages, page_size_, file_size_, max_batches_in_flight);
  check_budget(plan, max_batches_in_flight);
  std::vector<PageEntry> entries(plan.pages.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].page = plan.pages[i].page;
    entries[i].length = plan.pages[i].length;
    entries[i].remaining_uses = plan.pages[i].uses;
  }
  std::vector<std::vector<std::uint32_t>> batch_entries = std::move(plan.batch_pages);
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
    readers_.start(static_cast<int>(num_readers), [this](int) { reader_loop(); });
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
  storage_->interrupt();
  readers_wake_.notify_all();
  page_settled_.notify_all();
  readers_.join();
  throttle_.reset();
  storage_->resume();

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
    if (!result.error) {
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
    result.error = std::make_exception_ptr(
        IoError(path_, where,
                "it lies beyond the end of the file (" + std::to_string(file_size_) + " bytes)"));
    return result;
  }
  const Stopwatch start;
  if (!throttle_.wait_for_read(length)) {
    result.interrupted = true;
    result.seconds = start.seconds();
    return result;
  }
  if (const int error = result.buffer.allocate(length); error != 0) {
    result.error = std::make_exception_ptr(
        IoError(path_, "allocate " + std::to_string(length) + " bytes to " + where, error));
    result.seconds = start.seconds();
    return result;
  }
  try {
    result.interrupted = !storage_->read(offset, {result.buffer.data(), length});
    if (!result.interrupted) result.bytes_read = length;
  } catch (const Error&) {
    result.error = std::current_exception();  // names the file and the byte range
  }
  result.read_calls = 1;
  if (result.error || result.interrupted) result.buffer.reset();
  result.seconds = start.seconds();
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
    const Stopwatch start;
    page_settled_.wait(lock, all_settled);
    stats_.acquire_wait_seconds += start.seconds();
  }
  if (epoch_ != epoch || cancelled_) {
    throw ConfigError(batch_error("acquire", batch) + ": the epoch ended while waiting");
  }
  for (const std::uint32_t index : batch_entries_[batch]) {
    const PageEntry& entry = entries_[index];
    if (entry.state == PageState::kFailed) {
      // Release the batch now: a caller that gives up on it must not pin its pages for the rest
      // of the epoch, which could leave the readers waiting for budget for ever.
      const std::exception_ptr error = entry.error;
      drop_uses(batch);
      batch_state_[batch] = BatchState::kFailed;
      std::rethrow_exception(error);
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
  std::string text = "process cache (budget " + exact_byte_size_text(options_.budget_bytes) + ", " +
                     std::to_string(readers) + (readers == 1 ? " reader" : " readers");
  if (storage_->remote()) text += " over HTTP";
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
