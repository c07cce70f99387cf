// PageSource: how the loader gets the bytes of a .beton file's pages.
//
//   MmapSource    maps the whole file; the OS page cache does the caching, shared by every
//                 process on the machine (FFCV's os_cache=True). Nothing to schedule.
//   ProcessCache  reads into its own memory exactly the pages the epoch's batches need, in order
//                 of first use (epoch_plan.hpp), ahead of the consumer but within a byte budget,
//                 and frees each page once every batch that uses it has been released (FFCV's
//                 os_cache=False, with a bounded budget instead of 12 threads reading blindly).
//                 It reads a local file with pread, a URL with HTTP range requests
//                 (range_reader.hpp), several reads in flight.
//                 Its reads can go through StorageThrottle, which imposes a latency per read and
//                 a bandwidth cap and counts what was read, to study slow or networked storage
//                 honestly on one machine.
//
// The protocol, per epoch: begin_epoch(batch_pages) once; then for each batch b, acquire(b)
// before reading its samples (blocks until its pages are resident) and release(b) when the batch
// is no longer used. Batches are acquired in increasing order; releases may come in any order.
// A later begin_epoch cancels the previous epoch's pending reads. All methods are thread-safe.
//
// ProcessCache's budget check: while batch b is acquired, the pages it must hold are those used
// by b or by a batch after it that were first used at or before b, plus the pages of the
// `max_batches_in_flight` batches before b, which the caller may still hold; begin_epoch throws
// CacheBudgetError (a ConfigError saying what the epoch needs) when the peak of that over the
// epoch exceeds the budget. (A caller that holds an
// older batch than that does not deadlock, but the readers stall until it is released.)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ffcv/storage/range_reader.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

// The process cache's refusal of an epoch whose pages do not fit its budget: the message names
// the bytes needed and the budget, and needed_bytes() is the smallest budget that would run the
// epoch (a caller that knows why the schedule needs that much can say so in its own words).
class CacheBudgetError : public ConfigError {
 public:
  CacheBudgetError(const std::string& message, std::uint64_t needed_bytes)
      : ConfigError(message), needed_bytes_(needed_bytes) {}
  std::uint64_t needed_bytes() const { return needed_bytes_; }

 private:
  std::uint64_t needed_bytes_;
};

struct PageSourceStats {
  std::uint64_t bytes_read = 0;           // bytes read from storage (pread), all epochs
  std::uint64_t read_calls = 0;           // pread calls
  std::uint64_t pages_loaded = 0;         // pages read into the cache
  std::uint64_t pages_freed = 0;          // pages dropped: after their last use, or by end_epoch
  std::uint64_t resident_bytes = 0;       // cache memory in use now (pages loaded or being read)
  std::uint64_t peak_resident_bytes = 0;  // at most the budget
  double acquire_wait_seconds = 0;        // time acquire() spent waiting for pages
  double storage_seconds = 0;             // time spent in storage reads (throttle sleeps included)
};

class PageSource {
 public:
  virtual ~PageSource() = default;

  // `batch_pages[b]`: the sorted, distinct page numbers (ptr / page_size) batch b reads
  // (unsorted lists and duplicates are tolerated and normalized).
  // `max_batches_in_flight` (>= 1): how many acquired-but-unreleased batches the caller may hold.
  // Throws ConfigError when the schedule cannot run within the source's limits.
  virtual void begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                           std::uint64_t max_batches_in_flight) = 0;
  // Blocks until batch b's pages are readable. Throws the storage error (IoError) if one of
  // them could not be read; the batch is then released already (a later release(b) is accepted
  // and does nothing), and the source stays usable for the rest of the epoch and later ones. Throws
  // ConfigError for a batch outside the epoch or acquired twice, with no epoch begun, or when the
  // epoch is ended while it waits.
  virtual void acquire(std::uint64_t batch) = 0;
  // Throws ConfigError for a batch that is not acquired; does nothing once the epoch has ended.
  virtual void release(std::uint64_t batch) = 0;
  // Stops reading ahead and frees the epoch's pages (also done by begin_epoch and destruction).
  // Makes every acquire() waiting now or called later in this epoch throw ConfigError, without
  // freeing pages that callers may still be reading; end_epoch() frees them afterwards. This is
  // how a loader stops its workers promptly.
  virtual void cancel() = 0;
  virtual void end_epoch() = 0;

  // The bytes [ptr, ptr + size) of a page of an acquired, unreleased batch. Lock-free. Throws
  // FormatError when the range lies beyond the end of the file (or, for ProcessCache, crosses a
  // page boundary), ConfigError when ProcessCache does not hold the page.
  virtual std::span<const std::uint8_t> bytes(std::uint64_t ptr, std::uint64_t size) const = 0;

  virtual PageSourceStats stats() const = 0;
  // Throws FormatError when the storage changed under the source so that bytes() returned
  // something other than the file (the mmap source: the file was truncated while mapped). The
  // loader's workers call it after each run of samples, before trusting what they decoded.
  // Thread-safe; sources that detect such changes as they read need not override it.
  virtual void check_intact() const {}
  // Drops the file's pages from the OS page cache (and, for mmap, from the mapping), so that
  // the next epoch reads from storage: how a benchmark makes every epoch start cold. Call it
  // between epochs. Throws IoError when the kernel refuses.
  virtual void drop_os_cache() = 0;
  // "mmap", or e.g. "process cache (budget 512 MiB, 4 readers, latency 5 ms, 100 MB/s)".
  virtual std::string describe() const = 0;
};

// Limits imposed on storage reads, to imitate slow or networked storage.
struct StorageThrottle {
  double latency_seconds = 0;        // added to every read call
  double bandwidth_bytes_per_s = 0;  // 0: unlimited; shared by all reader threads
};

struct ProcessCacheOptions {
  std::uint64_t budget_bytes = std::uint64_t{1} << 30;  // resident page memory at most
  int reader_threads = 4;  // reads in flight at once (for a URL: HTTP connections)
  StorageThrottle throttle;
  HttpOptions http;  // timeouts and retries when the file is a URL
};

// Both throw IoError when the file cannot be opened, ConfigError for a zero page size or (process
// cache) fewer than one reader thread or a negative throttle setting. The process cache also
// reads URLs (http://, https://; see range_reader.hpp); the mmap source refuses them with a
// ConfigError, as nothing can map a file on another machine.
std::unique_ptr<PageSource> make_mmap_source(const std::string& path, std::uint64_t page_size);
std::unique_ptr<PageSource> make_process_cache(const std::string& path, std::uint64_t page_size,
                                               ProcessCacheOptions options);

}  // namespace ffcv
