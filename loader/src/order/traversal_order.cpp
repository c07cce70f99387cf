#include "ffcv/order/traversal_order.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "ffcv/util/counter_random.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

// Philox streams: a three-letter tag in the high 24 bits, the high bits of a draw counter in the
// low 8 bits (so one purpose may use up to 2^40 draws per epoch).
constexpr std::uint32_t kRandomPermutationTag = 0x6f7250;  // "orP"
constexpr std::uint32_t kQuasiPageOrderTag = 0x6f7150;     // "oqP"
constexpr std::uint32_t kQuasiInPageTag = 0x6f7153;        // "oqS"
constexpr std::uint32_t kQuasiPickTag = 0x6f7157;          // "oqW"

constexpr std::uint64_t kUnassigned = ~std::uint64_t{0};

// The random numbers of one purpose in one epoch: draw k is
// random_u64(seed, stream(tag, k >> 32), epoch, k & 0xffffffff).
class DrawSequence {
 public:
  DrawSequence(std::uint64_t seed, std::uint32_t tag, std::uint64_t epoch)
      : seed_(seed), tag_(tag), epoch_(epoch) {}

  std::uint64_t next() {
    const std::uint64_t high = counter_ >> 32;
    if (high > 0xff) throw ConfigError("traversal order: too many random draws in one epoch");
    const std::uint32_t stream = (tag_ << 8) | static_cast<std::uint32_t>(high);
    const std::uint64_t value =
        random_u64(seed_, stream, epoch_, static_cast<std::uint32_t>(counter_));
    ++counter_;
    has_half_ = false;
    return value;
  }

  // 32 random bits: the two halves of one 64-bit draw in turn.
  std::uint64_t next32() {
    if (has_half_) {
      has_half_ = false;
      return half_;
    }
    const std::uint64_t value = next();
    half_ = value & 0xffffffffu;
    has_half_ = true;
    return value >> 32;
  }

  // Uniform in [0, bound), bound >= 1, without bias. Bounds up to 2^32 use Lemire's
  // multiply-and-reject on 32-bit halves of the 64-bit draws (high half first), which halves the
  // Philox calls.
  std::uint64_t below(std::uint64_t bound) {
    if (bound <= (std::uint64_t{1} << 32)) {
      std::uint64_t product = next32() * bound;
      std::uint32_t low = static_cast<std::uint32_t>(product);
      if (low < bound) {
        const std::uint32_t threshold =
            static_cast<std::uint32_t>(((std::uint64_t{1} << 32) - bound) % bound);
        while (low < threshold) {
          product = next32() * bound;
          low = static_cast<std::uint32_t>(product);
        }
      }
      return product >> 32;
    }
    // Larger bounds (never reached in practice): mask to the next power of two and reject.
    std::uint64_t mask = bound - 1;
    for (int shift = 1; shift < 64; shift *= 2) mask |= mask >> shift;
    std::uint64_t value = next() & mask;
    while (value >= bound) value = next() & mask;
    return value;
  }

 private:
  std::uint64_t seed_;
  std::uint32_t tag_;
  std::uint64_t epoch_;
  std::uint64_t counter_ = 0;
  std::uint64_t half_ = 0;
  bool has_half_ = false;
};

// Fisher–Yates on values[begin, end).
void shuffle_range(std::vector<std::uint64_t>& values, std::uint64_t begin, std::uint64_t end,
                   DrawSequence& draws) {
  for (std::uint64_t i = end - begin; i > 1; --i) {
    const std::uint64_t j = draws.below(i);
    std::swap(values[begin + i - 1], values[begin + j]);
  }
}

// Size of share `rank` when `total` positions are split over `world_size` ranks.
std::uint64_t share_size(std::uint64_t total, std::uint32_t rank, std::uint32_t world_size) {
  return total / world_size + (rank < total % world_size ? 1 : 0);
}

// Samples grouped by page: page p holds samples[offsets[p] .. offsets[p + 1]), in selected order.
// Pages are numbered 0.. in order of first appearance in the selection; a virtual page (a run of
// kVirtualPageSamples selected samples without heap data) gets its own number, so virtual and
// real pages never share one.
struct PageBuckets {
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint64_t> samples;
};

PageBuckets bucket_by_page(const std::vector<std::uint64_t>& selected,
                           const std::vector<std::uint64_t>& page_of_sample) {
  const std::uint64_t n = selected.size();
  std::uint64_t max_page = 0;
  bool any_real = false;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t page = page_of_sample[selected[i]];
    if (page == kNoPage) continue;
    any_real = true;
    max_page = std::max(max_page, page);
  }
  // Real page ids are usually small and dense: a lookup table then; a hash map otherwise.
  const bool use_table = any_real && max_page <= 4 * n + 4096;
  std::vector<std::uint64_t> table(use_table ? max_page + 1 : 0, kUnassigned);
  std::unordered_map<std::uint64_t, std::uint64_t> map;

  std::vector<std::uint64_t> page_of_position(n);
  std::uint64_t num_pages = 0;
  std::uint64_t no_page_seen = 0;
  std::uint64_t current_virtual = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t page = page_of_sample[selected[i]];
    if (page == kNoPage) {
      if (no_page_seen % kVirtualPageSamples == 0) current_virtual = num_pages++;
      ++no_page_seen;
      page_of_position[i] = current_virtual;
    } else if (use_table) {
      if (table[page] == kUnassigned) table[page] = num_pages++;
      page_of_position[i] = table[page];
    } else {
      const auto [it, inserted] = map.try_emplace(page, num_pages);
      if (inserted) ++num_pages;
      page_of_position[i] = it->second;
    }
  }

  PageBuckets buckets;
  buckets.offsets.assign(num_pages + 1, 0);
  for (std::uint64_t i = 0; i < n; ++i) ++buckets.offsets[page_of_position[i] + 1];
  for (std::uint64_t p = 0; p < num_pages; ++p) buckets.offsets[p + 1] += buckets.offsets[p];
  std::vector<std::uint64_t> fill(buckets.offsets.begin(), buckets.offsets.end() - 1);
  buckets.samples.resize(n);
  for (std::uint64_t i = 0; i < n; ++i) buckets.samples[fill[page_of_position[i]]++] = selected[i];
  return buckets;
}

std::vector<std::uint64_t> quasi_random_order(const std::vector<std::uint64_t>& selected,
                                              const std::vector<std::uint64_t>& page_of_sample,
                                              std::uint64_t seed, std::uint64_t epoch,
                                              std::uint64_t window) {
  const std::uint64_t n = selected.size();
  if (n == 0) return {};
  PageBuckets buckets = bucket_by_page(selected, page_of_sample);
  const std::uint64_t num_pages = buckets.offsets.size() - 1;

  // Shuffle each page's samples, then the order in which pages are opened.
  DrawSequence in_page(seed, kQuasiInPageTag, epoch);
  for (std::uint64_t p = 0; p < num_pages; ++p) {
    shuffle_range(buckets.samples, buckets.offsets[p], buckets.offsets[p + 1], in_page);
  }
  std::vector<std::uint64_t> page_order(num_pages);
  for (std::uint64_t p = 0; p < num_pages; ++p) page_order[p] = p;
  DrawSequence page_draws(seed, kQuasiPageOrderTag, epoch);
  shuffle_range(page_order, 0, num_pages, page_draws);

  // The open pages; `cursor[p]` is page p's next unemitted sample. Every page is non-empty.
  std::vector<std::uint64_t> cursor(buckets.offsets.begin(), buckets.offsets.end() - 1);
  std::vector<std::uint64_t> open;
  open.reserve(std::min(window, num_pages));
  std::uint64_t next_page = 0;
  while (open.size() < window && next_page < num_pages) open.push_back(page_order[next_page++]);

  DrawSequence picks(seed, kQuasiPickTag, epoch);
  std::vector<std::uint64_t> order(n);
  for (std::uint64_t position = 0; position < n; ++position) {
    const std::uint64_t slot = picks.below(open.size());
    const std::uint64_t page = open[slot];
    order[position] = buckets.samples[cursor[page]++];
    if (cursor[page] == buckets.offsets[page + 1]) {
      // The page is drained: the next page in the page order takes its slot.
      if (next_page < num_pages) {
        open[slot] = page_order[next_page++];
      } else {
        open[slot] = open.back();
        open.pop_back();
      }
    }
  }
  return order;
}

}  // namespace

OrderKind parse_order_kind(const std::string& text) {
  if (text == "sequential") return OrderKind::kSequential;
  if (text == "random") return OrderKind::kRandom;
  if (text == "quasi_random" || text == "quasi-random") return OrderKind::kQuasiRandom;
  throw ConfigError("unknown traversal order '" + text +
                    "' (expected sequential, random or quasi_random)");
}

const char* order_kind_name(OrderKind kind) {
  switch (kind) {
    case OrderKind::kSequential:
      return "sequential";
    case OrderKind::kRandom:
      return "random";
    case OrderKind::kQuasiRandom:
      return "quasi_random";
  }
  return "unknown";
}

TraversalOrder::TraversalOrder(OrderOptions options, std::vector<std::uint64_t> page_of_sample)
    : options_(std::move(options)), page_of_sample_(std::move(page_of_sample)) {
  if (options_.world_size < 1) {
    throw ConfigError("traversal order: world_size must be at least 1");
  }
  if (options_.rank >= options_.world_size) {
    throw ConfigError("traversal order: rank " + std::to_string(options_.rank) +
                      " is out of range for world_size " + std::to_string(options_.world_size));
  }
  if (options_.batch_size < 1) {
    throw ConfigError("traversal order: batch_size must be at least 1");
  }
  const std::uint64_t num_samples = page_of_sample_.size();
  if (!options_.indices) {
    selected_.resize(num_samples);
    for (std::uint64_t i = 0; i < num_samples; ++i) selected_[i] = i;
    return;
  }
  // An index listed more than once is visited as many times (a sampler with replacement).
  selected_ = *options_.indices;
  for (std::uint64_t position = 0; position < selected_.size(); ++position) {
    const std::uint64_t index = selected_[position];
    if (index >= num_samples) {
      throw ConfigError("traversal order: indices[" + std::to_string(position) +
                        "] = " + std::to_string(index) + " is out of range (the dataset has " +
                        std::to_string(num_samples) + " samples)");
    }
  }
}

std::uint64_t TraversalOrder::rank_size() const {
  return share_size(selected_.size(), options_.rank, options_.world_size);
}

std::uint64_t TraversalOrder::smallest_rank_size() const {
  return selected_.size() / options_.world_size;
}

std::vector<std::uint64_t> TraversalOrder::global_order(std::uint64_t epoch) const {
  switch (options_.kind) {
    case OrderKind::kSequential:
      return selected_;
    case OrderKind::kRandom: {
      std::vector<std::uint64_t> order = selected_;
      DrawSequence draws(options_.seed, kRandomPermutationTag, epoch);
      shuffle_range(order, 0, order.size(), draws);
      return order;
    }
    case OrderKind::kQuasiRandom: {
      return quasi_random_order(selected_, page_of_sample_, options_.seed, epoch,
                                quasi_random_window(options_));
    }
  }
  throw ConfigError("traversal order: unknown order kind");
}

std::uint64_t quasi_random_window(const OrderOptions& options) {
  if (options.window_pages != 0) return options.window_pages;
  // 2 x batch_size, saturating.
  return options.batch_size > kNoPage / 2 ? kNoPage : 2 * options.batch_size;
}

std::vector<std::uint64_t> TraversalOrder::epoch_order(std::uint64_t epoch) const {
  std::vector<std::uint64_t> global = global_order(epoch);
  const std::uint32_t world = options_.world_size;
  const std::uint32_t rank = options_.rank;
  if (world == 1) return global;
  const std::uint64_t total = global.size();
  std::vector<std::uint64_t> share;
  share.reserve(share_size(total, rank, world));
  if (options_.kind == OrderKind::kQuasiRandom) {
    // Contiguous blocks; the first total % world ranks get one more.
    const std::uint64_t base = total / world;
    const std::uint64_t begin = rank * base + std::min<std::uint64_t>(rank, total % world);
    const std::uint64_t end = begin + share_size(total, rank, world);
    share.assign(global.begin() + begin, global.begin() + end);
  } else {
    for (std::uint64_t position = rank; position < total; position += world) {
      share.push_back(global[position]);
    }
  }
  return share;
}

BatchDiversity measure_batch_diversity(const std::vector<std::uint64_t>& order,
                                       std::uint64_t batch_size,
                                       const std::vector<std::uint64_t>& page_of_sample) {
  if (batch_size < 1) throw ConfigError("measure_batch_diversity: batch_size must be at least 1");
  BatchDiversity result;
  result.batches = order.size() / batch_size;  // full batches only
  if (result.batches == 0) return result;
  // A key per sample: its page, or for a sample without heap data, its virtual page
  // (index / kVirtualPageSamples) flagged so that it never equals a real page.
  std::vector<std::pair<bool, std::uint64_t>> keys(batch_size);
  std::uint64_t total_distinct = 0;
  for (std::uint64_t b = 0; b < result.batches; ++b) {
    for (std::uint64_t j = 0; j < batch_size; ++j) {
      const std::uint64_t index = order[b * batch_size + j];
      if (index >= page_of_sample.size()) {
        throw ConfigError("measure_batch_diversity: sample " + std::to_string(index) +
                          " is out of range (the dataset has " +
                          std::to_string(page_of_sample.size()) + " samples)");
      }
      const std::uint64_t page = page_of_sample[index];
      keys[j] = page == kNoPage ? std::make_pair(true, index / kVirtualPageSamples)
                                : std::make_pair(false, page);
    }
    std::sort(keys.begin(), keys.end());
    total_distinct += std::unique(keys.begin(), keys.end()) - keys.begin();
  }
  result.mean_distinct_pages = static_cast<double>(total_distinct) / result.batches;
  result.mean_distinct_page_fraction = result.mean_distinct_pages / batch_size;
  return result;
}

}  // namespace ffcv
