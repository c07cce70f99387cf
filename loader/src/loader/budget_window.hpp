// The QUASI_RANDOM window that a process cache's budget holds, and the pages each batch reads.
//
// With the process cache, QUASI_RANDOM's window (pages open at once) sets the memory an epoch
// needs: FFCV's default of 2 x batch size pages can keep a whole small file resident. When the
// window is left at 0, the loader takes the largest window whose epochs fit the budget instead
// (window_for_budget); an epoch that still does not fit is refused naming the window and the
// smallest budget that works (window_budget_message). Pure computations over the order and the
// file's page layout: no I/O, no threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/order/traversal_order.hpp"

namespace ffcv {

// The pages (sorted, distinct) that each batch in [first_batch, num_batches) of `order` reads;
// an empty list per batch when `reads_payload` is false or the samples have no heap data.
std::vector<std::vector<std::uint64_t>> batch_pages_of(
    const std::vector<std::uint64_t>& order, const std::vector<std::uint64_t>& page_of_sample,
    std::uint64_t batch_size, std::uint64_t first_batch, std::uint64_t num_batches,
    bool reads_payload);

// What one QUASI_RANDOM window needs of a process cache.
struct PageLayout {
  const std::vector<std::uint64_t>* page_of_sample = nullptr;
  std::uint64_t page_size = 0;
  std::uint64_t file_size = 0;
  std::uint64_t batch_size = 1;
  std::uint64_t num_batches = 0;        // per epoch, on this rank
  std::uint64_t batches_in_flight = 1;  // batches_ahead + 2
};

// The resident bytes epoch `epoch` of `order` needs at its peak.
std::uint64_t epoch_peak_bytes(const OrderOptions& order, const PageLayout& layout,
                               std::uint64_t epoch);

// The largest window (at least 1) whose first two epochs need at most 3/4 of `budget_bytes`: the
// rest is the room the readers fetch ahead in (and headroom for later epochs, whose peaks vary a
// little).
std::uint64_t window_for_budget(const OrderOptions& order, const PageLayout& layout,
                                std::uint64_t budget_bytes);

// The refusal of a QUASI_RANDOM epoch (window `window_pages`) whose pages need `needed_bytes`
// of a process cache holding `budget_bytes` (the process cache's own CacheBudgetError says what
// it needs): names the window, that need and the smallest budget that works as
// `cache_budget_mib = N`, and for a window the user chose that window_pages = 0 picks the largest
// that fits.
std::string window_budget_message(const std::string& path, std::uint64_t needed_bytes,
                                  std::uint64_t budget_bytes, std::uint64_t window_pages,
                                  std::uint64_t batches_in_flight, std::uint64_t epoch,
                                  bool window_chosen_by_user);

}  // namespace ffcv
