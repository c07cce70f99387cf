#include "page_allocator.hpp"

#include <algorithm>
#include <cstring>

#include "ffcv/util/errors.hpp"

namespace ffcv {

PageAllocator::PageAllocator(AtomicFile& file, std::uint64_t data_floor, std::uint64_t page_size)
    : file_(file), data_end_(data_floor), page_size_(page_size) {}

void PageAllocator::start_page() {
  page_start_ = align_up(data_end_, page_size_);
  if (page_capacity_ < page_size_) {
    page_.reset(
        static_cast<std::uint8_t*>(std::aligned_alloc(AtomicFile::kBlockAlignment, page_size_)));
    if (!page_)
      throw EncodeError("cannot allocate a page of " + std::to_string(page_size_) + " bytes");
    page_capacity_ = page_size_;
  }
  page_used_ = 0;
  page_open_ = true;
}

void PageAllocator::flush_page() {
  if (!page_open_) return;
  std::memset(page_.get() + page_used_, 0, page_size_ - page_used_);  // the padding
  file_.write_blocks_at(page_start_, page_.get(), page_size_);
  data_end_ = page_start_ + page_size_;
  ++pages_written_;
  page_open_ = false;
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
    std::memcpy(page_.get() + page_used_, payload.bytes.data(), payload.bytes.size());
    page_used_ += payload.bytes.size();
    entries_.push_back({sample, ptr, payload.bytes.size()});
    pointers.push_back(ptr);
  }
  heap_bytes_ += total;
  return pointers;
}

std::uint64_t PageAllocator::finish() {
  flush_page();
  return data_end_;
}

}  // namespace ffcv
