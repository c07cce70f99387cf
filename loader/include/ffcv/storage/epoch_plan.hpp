// EpochPlan: what a read-ahead page cache must do for one epoch, worked out before any read.
//
// From the pages each batch reads, in batch order, the plan lists every distinct page once, in
// order of first use (first batch, then page number), with how many batches read it and the
// first and last of them; per batch, the plan's indices of its pages. A cache that reads pages in
// plan order and frees each after its last use holds, while batch b is acquired, at most the
// pages whose [first_batch, last_batch + K] covers b, K being how many earlier batches the
// caller may still hold: peak_bytes is the largest such sum over the epoch, the memory budget
// the schedule needs. Pure: no I/O, no threads (ProcessCache runs the plan; tests check it alone).
#pragma once

#include <cstdint>
#include <vector>

namespace ffcv {

struct PlannedPage {
  std::uint64_t page = 0;
  std::uint64_t length = 0;  // bytes of the file the page covers: page_size, less for the last
  std::uint64_t uses = 0;    // batches that read it
  std::uint64_t first_batch = 0;
  std::uint64_t last_batch = 0;
};

struct EpochPlan {
  std::vector<PlannedPage> pages;  // distinct pages, in order of first use
  // batch_pages[b]: indices into `pages` of batch b's pages, in increasing page number.
  std::vector<std::vector<std::uint32_t>> batch_pages;
  std::uint64_t peak_bytes = 0;  // resident page bytes needed at the schedule's peak
  std::uint64_t peak_pages = 0;  // pages resident then
  std::uint64_t peak_batch = 0;  // the batch acquired then

  // Bytes one epoch reads from storage: every distinct page once.
  std::uint64_t total_bytes() const;
};

// `batch_pages[b]`: the page numbers (ptr / page_size) batch b reads; unsorted lists and
// duplicates are tolerated. Pages at or beyond the end of the file count page_size bytes (a
// read of them fails later, with the page named). Throws ConfigError for a zero page size, a
// zero `max_batches_in_flight`, or more than 2^32 - 1 distinct pages.
EpochPlan plan_epoch(const std::vector<std::vector<std::uint64_t>>& batch_pages,
                     std::uint64_t page_size, std::uint64_t file_size,
                     std::uint64_t max_batches_in_flight);

}  // namespace ffcv
