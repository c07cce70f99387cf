#include "budget_window.hpp"

#include <algorithm>

#include "ffcv/storage/epoch_plan.hpp"
#include "ffcv/util/byte_size.hpp"

namespace ffcv {

std::vector<std::vector<std::uint64_t>> batch_pages_of(
    const std::vector<std::uint64_t>& order, const std::vector<std::uint64_t>& page_of_sample,
    std::uint64_t batch_size, std::uint64_t first_batch, std::uint64_t num_batches,
    bool reads_payload) {
  std::vector<std::vector<std::uint64_t>> batch_pages;
  batch_pages.reserve(num_batches > first_batch ? num_batches - first_batch : 0);
  for (std::uint64_t b = first_batch; b < num_batches; ++b) {
    std::vector<std::uint64_t> pages;
    if (reads_payload) {
      const std::uint64_t end = std::min<std::uint64_t>((b + 1) * batch_size, order.size());
      for (std::uint64_t p = b * batch_size; p < end; ++p) {
        const std::uint64_t page = page_of_sample[order[p]];
        if (page != kNoPage) pages.push_back(page);
      }
      std::sort(pages.begin(), pages.end());
      pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    }
    batch_pages.push_back(std::move(pages));
  }
  return batch_pages;
}

std::uint64_t epoch_peak_bytes(const OrderOptions& order, const PageLayout& layout,
                               std::uint64_t epoch) {
  const TraversalOrder traversal(order, *layout.page_of_sample);
  const std::vector<std::uint64_t> samples = traversal.epoch_order(epoch);
  const auto pages = batch_pages_of(samples, *layout.page_of_sample, layout.batch_size, 0,
                                    layout.num_batches, true);
  return plan_epoch(pages, layout.page_size, layout.file_size, layout.batches_in_flight).peak_bytes;
}

namespace {

std::uint64_t pages_in_file(const PageLayout& layout) {
  return std::max<std::uint64_t>(1, (layout.file_size + layout.page_size - 1) / layout.page_size);
}

// The peak of the first two epochs with `window`.
std::uint64_t peak_with_window(OrderOptions order, const PageLayout& layout, std::uint64_t window) {
  order.window_pages = window;
  return std::max(epoch_peak_bytes(order, layout, 0), epoch_peak_bytes(order, layout, 1));
}

}  // namespace

std::uint64_t window_for_budget(const OrderOptions& order, const PageLayout& layout,
                                std::uint64_t budget_bytes) {
  // A quarter of the budget is left to the readers, which fetch the next pages ahead within it:
  // a window that takes all of it leaves the storage's latency exposed.
  const std::uint64_t target = budget_bytes / 4 * 3;
  std::uint64_t low = 1, high = pages_in_file(layout);
  if (peak_with_window(order, layout, high) <= target) return high;
  if (peak_with_window(order, layout, low) > target) return low;
  // peak(low) fits, peak(high) does not; the peak grows with the window.
  while (high - low > 1) {
    const std::uint64_t middle = low + (high - low) / 2;
    (peak_with_window(order, layout, middle) <= target ? low : high) = middle;
  }
  return low;
}

std::string window_budget_message(const std::string& path, std::uint64_t needed_bytes,
                                  std::uint64_t budget_bytes, std::uint64_t window_pages,
                                  std::uint64_t batches_in_flight, std::uint64_t epoch,
                                  bool window_chosen_by_user) {
  const std::uint64_t mib = (needed_bytes + (1u << 20) - 1) >> 20;
  std::string message =
      path + ": the process cache's budget, " + exact_byte_size_text(budget_bytes) +
      ", is too small for QUASI_RANDOM with a window of " + std::to_string(window_pages) +
      (window_pages == 1 ? " page" : " pages") + ": epoch " + std::to_string(epoch) + " needs " +
      bytes_and_size_text(needed_bytes) + " of resident pages (the open pages and those of " +
      std::to_string(batches_in_flight) + " batches in flight). Give a budget of at least " +
      std::to_string(mib) + " MiB (cache_budget_mib = " + std::to_string(mib) + ")";
  if (window_chosen_by_user && window_pages > 1) {
    message += ", or a smaller window (window_pages = 0 takes the largest that fits the budget)";
  }
  return message;
}

}  // namespace ffcv
