#include "ffcv/storage/epoch_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "ffcv/util/errors.hpp"

namespace ffcv {

std::uint64_t EpochPlan::total_bytes() const {
  std::uint64_t total = 0;
  for (const PlannedPage& page : pages) total += page.length;
  return total;
}

EpochPlan plan_epoch(const std::vector<std::vector<std::uint64_t>>& batch_pages,
                     std::uint64_t page_size, std::uint64_t file_size,
                     std::uint64_t max_batches_in_flight) {
  if (page_size == 0) throw ConfigError("epoch plan: the page size must be positive");
  if (max_batches_in_flight == 0) {
    throw ConfigError("epoch plan: max_batches_in_flight must be at least 1");
  }
  const std::uint64_t num_file_pages = file_size / page_size + (file_size % page_size != 0);
  const auto page_length = [&](std::uint64_t page) {
    if (page >= num_file_pages) return page_size;
    return std::min(page_size, file_size - page * page_size);
  };

  EpochPlan plan;
  const std::uint64_t num_batches = batch_pages.size();
  plan.batch_pages.resize(num_batches);
  std::unordered_map<std::uint64_t, std::uint32_t> index_of_page;
  std::vector<std::uint64_t> pages;
  for (std::uint64_t b = 0; b < num_batches; ++b) {
    pages = batch_pages[b];
    std::sort(pages.begin(), pages.end());
    pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    std::vector<std::uint32_t>& indices = plan.batch_pages[b];
    indices.reserve(pages.size());
    for (const std::uint64_t page : pages) {
      const auto [it, inserted] =
          index_of_page.try_emplace(page, static_cast<std::uint32_t>(plan.pages.size()));
      if (inserted) {
        if (plan.pages.size() == UINT32_MAX) {
          throw ConfigError("epoch plan: too many distinct pages in one epoch");
        }
        plan.pages.push_back({page, page_length(page), 0, b, b});
      }
      PlannedPage& planned = plan.pages[it->second];
      ++planned.uses;
      planned.last_batch = b;
      indices.push_back(it->second);
    }
  }

  // A sweep over the batches: a page becomes resident at its first batch and stays until K
  // batches after its last one.
  const std::uint64_t k = std::min(max_batches_in_flight, num_batches);
  std::vector<std::uint64_t> bytes_starting(num_batches + 1, 0);
  std::vector<std::uint64_t> bytes_ending(num_batches + 1, 0);
  std::vector<std::uint64_t> pages_starting(num_batches + 1, 0);
  std::vector<std::uint64_t> pages_ending(num_batches + 1, 0);
  for (const PlannedPage& page : plan.pages) {
    const std::uint64_t end = std::min(num_batches, page.last_batch + k + 1);
    bytes_starting[page.first_batch] += page.length;
    bytes_ending[end] += page.length;
    ++pages_starting[page.first_batch];
    ++pages_ending[end];
  }
  std::uint64_t bytes = 0, resident_pages = 0;
  for (std::uint64_t b = 0; b < num_batches; ++b) {
    bytes += bytes_starting[b];
    bytes -= bytes_ending[b];
    resident_pages += pages_starting[b];
    resident_pages -= pages_ending[b];
    if (bytes > plan.peak_bytes) {
      plan.peak_bytes = bytes;
      plan.peak_pages = resident_pages;
      plan.peak_batch = b;
    }
  }
  return plan;
}

}  // namespace ffcv
