#include "page_allocator.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "ffcv/util/copy_past_cache.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

PageAllocator::PageAllocator(AtomicFile& file, std::uint64_t data_floor, std::uint64_t page_size)
    : file_(file), data_end_(data_floor), page_size_(page_size) {
  writer_ = std::thread([this] { write_pages(); });
}

PageAllocator::~PageAllocator() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  writer_.join();  // after the write in progress, if any
}

void PageAllocator::start_page() {
  page_start_ = align_up(data_end_, page_size_);
  if (page_.size() < page_size_) {
    page_ = Buffer{};
    {
      const std::lock_guard lock(mutex_);
      while (!spare_.empty() && page_.size() < page_size_) {
        page_ = std::move(spare_.back());
        spare_.pop_back();
      }
    }
  }
  if (page_.size() < page_size_) {
    page_ = Buffer(page_size_);
    if (page_.data() == nullptr) {
      throw EncodeError("cannot allocate a page of " + std::to_string(page_size_) + " bytes");
    }
  }
  page_used_ = 0;
  page_open_ = true;
}

void PageAllocator::wait_for_queue(std::size_t max_queued) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return write_error_ || queued_.size() < max_queued; });
  if (write_error_) std::rethrow_exception(write_error_);
}

void PageAllocator::flush_page() {
  if (!page_open_) return;
  std::memset(page_.data() + page_used_, 0, page_size_ - page_used_);  // the padding
  wait_for_queue(kPagesQueued);
  {
    const std::lock_guard lock(mutex_);
    queued_.push_back({std::move(page_), page_start_, page_size_});
    page_ = Buffer{};  // start_page() takes a written page's buffer, or a new one
  }
  changed_.notify_all();
  data_end_ = page_start_ + page_size_;
  ++pages_written_;
  page_open_ = false;
}

void PageAllocator::write_pages() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || (!queued_.empty() && !write_error_); });
    if (stop_ || write_error_) return;  // stopped (pages still queued are dropped), or failed
    const QueuedPage& page = queued_.front();
    const std::uint8_t* data = page.buffer.data();
    const std::uint64_t offset = page.offset, size = page.size;
    lock.unlock();
    std::exception_ptr error;
    try {
      file_.write_blocks_at(offset, data, size);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) write_error_ = error;
    if (spare_.size() < kPagesQueued) spare_.push_back(std::move(queued_.front().buffer));
    queued_.pop_front();
    changed_.notify_all();
  }
}

std::vector<std::uint64_t> PageAllocator::place(std::uint64_t sample,
                                                const std::vector<EncodedAllocation>& payloads) {
  std::uint64_t total = 0;
  for (const EncodedAllocation& payload : payloads) total += payload.bytes.size();
  if (total > page_size_) {
    std::uint64_t grown = page_size_;
    while (grown < total && grown <= kMaxPageSize / 2) grown *= 2;
    if (grown < total) {
      throw EncodeError("needs " + std::to_string(total) +
                        " bytes of data, more than the largest page size (" +
                        std::to_string(kMaxPageSize) + " bytes)");
    }
    flush_page();
    page_size_ = grown;
  }
  if (page_open_ && page_used_ + total > page_size_) flush_page();
  if (!page_open_ && total > 0) start_page();
  std::vector<std::uint64_t> pointers;
  pointers.reserve(payloads.size());
  for (const EncodedAllocation& payload : payloads) {
    const std::uint64_t ptr = page_start_ + page_used_;
    // The page goes to the disk next and is not read again.
    copy_past_cache(page_.data() + page_used_, payload.bytes.data(), payload.bytes.size());
    page_used_ += payload.bytes.size();
    entries_.push_back({sample, ptr, payload.bytes.size()});
    pointers.push_back(ptr);
  }
  heap_bytes_ += total;
  return pointers;
}

std::uint64_t PageAllocator::finish() {
  flush_page();
  wait_for_queue(1);  // every page written
  return data_end_;
}

}  // namespace ffcv
