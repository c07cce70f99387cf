// TraversalOrder: which samples an epoch visits, in which order, on which rank.
//
// An order is a pure function of (options, epoch): the same options give the same order on
// every machine and for any number of worker threads, and each rank computes its share without
// talking to the others.
//
//   SEQUENTIAL    the selected indices in their given order, every epoch
//   RANDOM        a permutation of the selected indices, keyed by (seed, epoch)
//   QUASI_RANDOM  page-aware: pages are visited in a random order, at most `window_pages` pages
//                 are open at a time, and each position draws its sample from a random open page.
//                 Batches then touch few pages, so a process cache holds few pages at once, while
//                 samples still mix across `window_pages` pages. Samples without heap data are
//                 grouped into virtual pages of `kVirtualPageSamples` consecutive selected
//                 samples. Page order and the order within each page are drawn afresh from
//                 (seed, epoch); unlike FFCV, nothing carries over from one epoch to the next.
//
// Distributed training: the epoch's global order is split into `world_size` disjoint shares
// whose sizes differ by at most one: strided (position % world_size == rank) for SEQUENTIAL
// and RANDOM, contiguous blocks for QUASI_RANDOM so that each rank reads its own pages. Every
// position of the selection is visited exactly once per epoch across all ranks (FFCV pads
// instead, and refuses QUASI_RANDOM when distributed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ffcv {

enum class OrderKind { kSequential, kRandom, kQuasiRandom };

// "sequential", "random", "quasi_random" (also "quasi-random"). Throws ConfigError otherwise.
OrderKind parse_order_kind(const std::string& text);
const char* order_kind_name(OrderKind kind);

inline constexpr std::uint64_t kNoPage = ~std::uint64_t{0};
inline constexpr std::uint64_t kVirtualPageSamples = 256;

struct OrderOptions {
  OrderKind kind = OrderKind::kSequential;
  std::uint64_t seed = 0;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  // The subset of dataset indices to visit; all samples when unset. An index listed n times is
  // visited n times per epoch (as by a sampler with replacement); the steps' random draws are
  // keyed by (seed, epoch, sample), so its visits in one epoch draw alike.
  std::optional<std::vector<std::uint64_t>> indices;
  // QUASI_RANDOM: pages open at once. 0 means FFCV's choice, 2 x batch_size.
  std::uint64_t window_pages = 0;
  std::uint64_t batch_size = 1;  // only used for the window default
};

// The pages QUASI_RANDOM keeps open: window_pages, or for 0 FFCV's choice, 2 x batch_size.
std::uint64_t quasi_random_window(const OrderOptions& options);

class TraversalOrder {
 public:
  // `page_of_sample[i]` is the page holding sample i's heap data, kNoPage when it has none
  // (only QUASI_RANDOM uses it). Throws ConfigError for a bad rank/world size or an index out of
  // range.
  TraversalOrder(OrderOptions options, std::vector<std::uint64_t> page_of_sample);

  const OrderOptions& options() const { return options_; }
  // Number of selected indices over all ranks.
  std::uint64_t global_size() const { return selected_.size(); }
  // Number of indices this rank visits per epoch (the same every epoch).
  std::uint64_t rank_size() const;
  // Smallest rank_size() over all ranks: with drop_last, every rank serves
  // smallest_rank_size() / batch_size batches, so ranks stay in lockstep.
  std::uint64_t smallest_rank_size() const;

  // The dataset indices this rank visits in `epoch`, in order.
  std::vector<std::uint64_t> epoch_order(std::uint64_t epoch) const;
  // The global order of `epoch` before it is split across ranks.
  std::vector<std::uint64_t> global_order(std::uint64_t epoch) const;

 private:
  OrderOptions options_;
  std::vector<std::uint64_t> page_of_sample_;
  std::vector<std::uint64_t> selected_;
};

// How mixed the batches of an order are, in pages: over consecutive batches of `batch_size`
// indices, the mean number of distinct pages a batch draws from, and that number divided by the
// batch size (1.0 for a fully random order on a large dataset, small for SEQUENTIAL).
// Only full batches count (as with drop_last); a shorter order gives batches = 0 and zero means.
// A sample without heap data counts as virtual page index / kVirtualPageSamples, which never
// equals a real page. Throws ConfigError for batch_size 0 or an index out of range.
struct BatchDiversity {
  double mean_distinct_pages = 0;
  double mean_distinct_page_fraction = 0;
  std::uint64_t batches = 0;
};
BatchDiversity measure_batch_diversity(const std::vector<std::uint64_t>& order,
                                       std::uint64_t batch_size,
                                       const std::vector<std::uint64_t>& page_of_sample);

}  // namespace ffcv
