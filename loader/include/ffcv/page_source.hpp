// PageSource: how the loader gets the bytes of a .beton file's pages.
//
//   MmapSource    maps the whole file; the OS page cache does the caching, shared by every
//                 process on the machine (FFCV's os_cache=True). Nothing to schedule.
//   ProcessCache  reads with pread into its own memory exactly the pages the epoch's batches
//                 need, in order of first use, ahead of the consumer but within a byte budget,
//                 and frees each page once every batch that uses it has been released (FFCV's
//                 os_cache=False, with a bounded budget instead of 12 threads reading blindly).
//                 Its reads can go through StorageThrottle, which imposes a latency per read and
//                 a bandwidth cap and counts what was read, to study slow or networked storage
//                 honestly on one machine.
//
// The protocol, per epoch: begin_epoch(batch_pages) once; then for each batch b, acquire(b)
// before reading its samples (blocks until its pages are resident) and release(b) when the batch
// is no longer used. Batches are acquired in increasing order; releases may come in any order.
// A later begin_epoch cancels the previous epoch's pending reads. All methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ffcv {

struct PageSourceStats {
  std::uint64_t bytes_read = 0;       // bytes read from storage (pread), all epochs
  std::uint64_t read_calls = 0;       // pread calls
  std::uint64_t pages_loaded = 0;     // pages read into the cache
  std::uint64_t pages_freed = 0;      // pages dropped after their last use
  std::uint64_t resident_bytes = 0;   // cache memory in use now
  std::uint64_t peak_resident_bytes = 0;
  double acquire_wait_seconds = 0;    // time acquire() spent waiting for pages
  double storage_seconds = 0;         // time spent in storage reads (throttle sleeps included)
};

class PageSource {
 public:
  virtual ~PageSource() = default;

  // `batch_pages[b]`: the sorted, distinct page numbers (ptr / page_size) batch b reads.
  // `max_batches_in_flight`: how many acquired-but-unreleased batches the caller may hold.
  // Throws ConfigError when the schedule cannot run within the source's limits.
  virtual void begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                           std::uint64_t max_batches_in_flight) = 0;
  // Blocks until batch b's pages are readable. Throws the storage error (IoError) if one of
  // them could not be read; the source stays usable for a later epoch.
  virtual void acquire(std::uint64_t batch) = 0;
  virtual void release(std::uint64_t batch) = 0;
  // Stops reading ahead and frees the epoch's pages (also done by begin_epoch and destruction).
  virtual void end_epoch() = 0;

  // The bytes [ptr, ptr + size) of a page of an acquired, unreleased batch.
  virtual std::span<const std::uint8_t> bytes(std::uint64_t ptr, std::uint64_t size) const = 0;

  virtual PageSourceStats stats() const = 0;
  virtual std::string describe() const = 0;  // e.g. "mmap", "process cache (512 MiB budget)"
};

// Limits imposed on storage reads, to imitate slow or networked storage.
struct StorageThrottle {
  double latency_seconds = 0;       // added to every read call
  double bandwidth_bytes_per_s = 0; // 0: unlimited; shared by all reader threads
};

struct ProcessCacheOptions {
  std::uint64_t budget_bytes = std::uint64_t{1} << 30;  // resident page memory at most
  int reader_threads = 4;
  StorageThrottle throttle;
};

// Both throw IoError when the file cannot be opened.
std::unique_ptr<PageSource> make_mmap_source(const std::string& path, std::uint64_t page_size);
std::unique_ptr<PageSource> make_process_cache(const std::string& path, std::uint64_t page_size,
                                               ProcessCacheOptions options);

}  // namespace ffcv
