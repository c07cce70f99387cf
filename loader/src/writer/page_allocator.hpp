// Internal: places each sample's heap payloads into pages, in sample order, and writes pages.
//
// Pages are P bytes at absolute offsets k*P, the first at or after the end of the metadata
// table. A sample's payloads are packed back to back in one page; when they do not fit in the
// rest of the current page, that page is written out (zero-padded to P bytes) and a new one
// begins. A sample larger than P switches to the smallest power of two that holds it; the next
// page then starts at a multiple of the new size. Pages are whole, aligned blocks, so they are
// written past the page cache where the file system allows it (AtomicFile::write_blocks_at).
//
// Full pages are written, in order, by a thread of the allocator's own while the next ones fill:
// up to kPagesQueued full pages wait for the disk or are being written, so the committer that
// places samples waits for the disk only when that many are behind (a disk that stalls for a
// moment, as virtual and network disks do, is absorbed instead of stopping the encoders). A
// failed write is thrown by the next place() that needs a page, or by finish(); the destructor
// waits for the write in progress and drops the pages still queued.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "ffcv/field.hpp"
#include "ffcv/format/format.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/direct_write_buffer.hpp"

namespace ffcv {

class PageAllocator {
 public:
  PageAllocator(AtomicFile& file, std::uint64_t data_floor, std::uint64_t page_size);
  ~PageAllocator();
  PageAllocator(const PageAllocator&) = delete;
  PageAllocator& operator=(const PageAllocator&) = delete;

  // Places the payloads of `sample`; returns their absolute pointers, in order, and records
  // their allocation-table entries. Throws EncodeError when a sample exceeds the largest page.
  std::vector<std::uint64_t> place(std::uint64_t sample,
                                   const std::vector<EncodedAllocation>& payloads);
  // Writes the last page; returns the end of the data region (where the alloc table goes).
  std::uint64_t finish();

  std::uint64_t page_size() const { return page_size_; }
  std::uint64_t pages_written() const { return pages_written_; }
  std::uint64_t heap_bytes() const { return heap_bytes_; }
  const std::vector<AllocEntry>& entries() const { return entries_; }

 private:
  // Full pages waiting for the disk or being written, at most (beside the one filling).
  static constexpr std::size_t kPagesQueued = 4;

  using Buffer = DirectWriteBuffer;  // in huge pages where it can be
  struct QueuedPage {
    Buffer buffer;
    std::uint64_t offset = 0, size = 0;
  };

  void flush_page();
  void start_page();
  // Waits until fewer than `max_queued` pages are queued; rethrows a failed write.
  void wait_for_queue(std::size_t max_queued);
  void write_pages();  // the writing thread

  AtomicFile& file_;
  std::uint64_t data_end_;  // end of the last written page (or of the metadata table)
  std::uint64_t page_size_;
  Buffer page_;  // the page being filled
  std::uint64_t page_start_ = 0;
  std::uint64_t page_used_ = 0;
  bool page_open_ = false;
  std::uint64_t pages_written_ = 0;
  std::uint64_t heap_bytes_ = 0;
  std::vector<AllocEntry> entries_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<QueuedPage> queued_;  // the front one is being written
  std::vector<Buffer> spare_;      // written pages' buffers, for the next pages
  std::exception_ptr write_error_;
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace ffcv
