// TraversalOrder: each epoch visits the selected samples exactly once, per order kind, per rank.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "ffcv/order/traversal_order.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;

namespace {

using Indices = std::vector<std::uint64_t>;

constexpr OrderKind kAllKinds[] = {OrderKind::kSequential, OrderKind::kRandom,
                                   OrderKind::kQuasiRandom};

// `count` samples, `per_page` to a page; every `no_page_every`-th sample has no heap data.
Indices make_pages(std::uint64_t count, std::uint64_t per_page, std::uint64_t no_page_every = 0) {
  Indices pages(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    pages[i] = (no_page_every != 0 && i % no_page_every == 0) ? kNoPage : i / per_page;
  }
  return pages;
}

OrderOptions make_options(OrderKind kind, std::uint64_t seed = 1) {
  OrderOptions options;
  options.kind = kind;
  options.seed = seed;
  return options;
}

// 0, 1, ..., count - 1.
Indices first_indices(std::uint64_t count) {
  Indices values(count);
  for (std::uint64_t i = 0; i < count; ++i) values[i] = i;
  return values;
}

Indices sorted(Indices values) {
  std::sort(values.begin(), values.end());
  return values;
}

// The largest number of pages open at once, a page being open from its first to its last
// position in `order`. `page_of` maps a position's sample to its page key.
template <typename PageOf>
std::uint64_t max_open_pages(const Indices& order, PageOf page_of) {
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> span;  // first, last
  for (std::uint64_t position = 0; position < order.size(); ++position) {
    const std::uint64_t page = page_of(order[position]);
    auto it = span.find(page);
    if (it == span.end()) {
      span.emplace(page, std::make_pair(position, position));
    } else {
      it->second.second = position;
    }
  }
  std::vector<int> delta(order.size() + 1, 0);
  for (const auto& [page, first_last] : span) {
    ++delta[first_last.first];
    --delta[first_last.second + 1];
  }
  std::int64_t open = 0, max_open = 0;
  for (int d : delta) {
    open += d;
    max_open = std::max(max_open, open);
  }
  return static_cast<std::uint64_t>(max_open);
}

}  // namespace

TEST_CASE("order kinds parse and print", "[order]") {
  CHECK(parse_order_kind("sequential") == OrderKind::kSequential);
  CHECK(parse_order_kind("random") == OrderKind::kRandom);
  CHECK(parse_order_kind("quasi_random") == OrderKind::kQuasiRandom);
  CHECK(parse_order_kind("quasi-random") == OrderKind::kQuasiRandom);
  for (OrderKind kind : kAllKinds) CHECK(parse_order_kind(order_kind_name(kind)) == kind);
  CHECK_THROWS_AS(parse_order_kind("shuffled"), ConfigError);
  CHECK_THROWS_AS(parse_order_kind(""), ConfigError);
}

TEST_CASE("every epoch visits the selected samples exactly once", "[order]") {
  const Indices pages = make_pages(1000, 37, 11);
  Indices subset;
  for (std::uint64_t i = 999;; i -= 3) {
    subset.push_back(i);
    if (i < 3) break;
  }
  for (OrderKind kind : kAllKinds) {
    for (bool with_indices : {false, true}) {
      INFO(order_kind_name(kind) << (with_indices ? " with indices" : " without indices"));
      OrderOptions options = make_options(kind);
      options.batch_size = 4;
      if (with_indices) options.indices = subset;
      const TraversalOrder order(options, pages);
      const Indices expected = with_indices ? subset : first_indices(pages.size());
      CHECK(order.global_size() == expected.size());
      CHECK(order.rank_size() == expected.size());
      for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
        const Indices served = order.epoch_order(epoch);
        CHECK(served == order.global_order(epoch));
        CHECK(sorted(served) == sorted(expected));
        if (kind == OrderKind::kSequential) CHECK(served == expected);
      }
    }
  }
}

TEST_CASE("an index listed several times is visited as often as listed", "[order]") {
  // A sampler with replacement lists some samples more than once.
  const Indices pages = make_pages(20, 4, 7);
  const Indices listed{3, 1, 3, 3, 19, 1, 0, 19};
  for (OrderKind kind : kAllKinds) {
    INFO(order_kind_name(kind));
    OrderOptions options = make_options(kind);
    options.batch_size = 2;
    options.indices = listed;
    const TraversalOrder order(options, pages);
    CHECK(order.global_size() == listed.size());
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      CHECK(sorted(order.epoch_order(epoch)) == sorted(listed));
    }
    if (kind == OrderKind::kSequential) CHECK(order.epoch_order(0) == listed);
    options.world_size = 2;
    Indices both;
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
      options.rank = rank;
      const Indices share = TraversalOrder(options, pages).epoch_order(1);
      both.insert(both.end(), share.begin(), share.end());
    }
    CHECK(sorted(both) == sorted(listed));
  }
}

TEST_CASE("RANDOM is a pure function of seed and epoch", "[order]") {
  const Indices pages = make_pages(500, 10);
  const TraversalOrder a(make_options(OrderKind::kRandom, 7), pages);
  const TraversalOrder b(make_options(OrderKind::kRandom, 7), pages);
  const TraversalOrder other_seed(make_options(OrderKind::kRandom, 8), pages);
  // Computing earlier epochs first changes nothing.
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) a.global_order(epoch);
  CHECK(a.global_order(3) == b.global_order(3));
  CHECK(a.global_order(0) != a.global_order(1));
  CHECK(a.global_order(1) != a.global_order(2));
  CHECK(a.global_order(0) != other_seed.global_order(0));
  CHECK(a.global_order(0) != first_indices(500));
}

TEST_CASE("QUASI_RANDOM is a pure function of seed and epoch", "[order]") {
  const Indices pages = make_pages(3000, 50, 7);
  OrderOptions options = make_options(OrderKind::kQuasiRandom, 3);
  options.batch_size = 8;
  const TraversalOrder a(options, pages);
  const TraversalOrder b(options, pages);
  options.seed = 4;
  const TraversalOrder other_seed(options, pages);
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) a.global_order(epoch);
  CHECK(a.global_order(2) == b.global_order(2));
  CHECK(a.global_order(0) != a.global_order(1));
  CHECK(a.global_order(0) != other_seed.global_order(0));
}

TEST_CASE("RANDOM's first position is uniform over the samples", "[order]") {
  constexpr std::uint64_t kSamples = 10;
  constexpr std::uint64_t kEpochs = 20000;
  const TraversalOrder order(make_options(OrderKind::kRandom, 12345), make_pages(kSamples, 1));
  std::vector<double> first(kSamples, 0), last(kSamples, 0);
  for (std::uint64_t epoch = 0; epoch < kEpochs; ++epoch) {
    const Indices served = order.global_order(epoch);
    ++first[served.front()];
    ++last[served.back()];
  }
  const double expected = static_cast<double>(kEpochs) / kSamples;
  double chi_first = 0, chi_last = 0;
  for (std::uint64_t i = 0; i < kSamples; ++i) {
    chi_first += (first[i] - expected) * (first[i] - expected) / expected;
    chi_last += (last[i] - expected) * (last[i] - expected) / expected;
  }
  // 9 degrees of freedom: mean 9, P(chi2 > 35) < 1e-4.
  INFO("chi-square first " << chi_first << ", last " << chi_last);
  CHECK(chi_first < 35);
  CHECK(chi_last < 35);
}

TEST_CASE("RANDOM draws each permutation of three samples equally often", "[order]") {
  constexpr std::uint64_t kEpochs = 12000;
  const TraversalOrder order(make_options(OrderKind::kRandom, 777), make_pages(3, 1));
  std::map<Indices, double> counts;
  for (std::uint64_t epoch = 0; epoch < kEpochs; ++epoch) ++counts[order.global_order(epoch)];
  REQUIRE(counts.size() == 6);
  const double expected = kEpochs / 6.0;
  double chi = 0;
  for (const auto& [permutation, count] : counts) {
    chi += (count - expected) * (count - expected) / expected;
  }
  // 5 degrees of freedom: mean 5, P(chi2 > 30) < 2e-5.
  INFO("chi-square " << chi);
  CHECK(chi < 30);
}

TEST_CASE("ranks partition each epoch with shares differing by at most one", "[order]") {
  for (OrderKind kind : kAllKinds) {
    for (std::uint64_t count : {0, 1, 3, 10, 1001}) {
      for (bool with_indices : {false, true}) {
        for (std::uint32_t world = 1; world <= 4; ++world) {
          INFO(order_kind_name(kind) << ", " << count << " samples, world " << world
                                     << (with_indices ? ", indices" : ""));
          const Indices pages = make_pages(count, 13, 5);
          OrderOptions options = make_options(kind, 99);
          options.world_size = world;
          options.batch_size = 3;
          if (with_indices) {
            Indices subset;
            for (std::uint64_t i = 0; i < count; i += 2) subset.push_back(count - 1 - i);
            options.indices = subset;
          }
          for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
            const Indices global = TraversalOrder(options, pages).global_order(epoch);
            Indices concatenated, all;
            std::uint64_t smallest = ~std::uint64_t{0}, largest = 0;
            for (std::uint32_t rank = 0; rank < world; ++rank) {
              options.rank = rank;
              const TraversalOrder order(options, pages);
              const Indices share = order.epoch_order(epoch);
              CHECK(order.rank_size() == share.size());
              CHECK(order.global_size() == global.size());
              CHECK(order.global_order(epoch) == global);
              smallest = std::min<std::uint64_t>(smallest, share.size());
              largest = std::max<std::uint64_t>(largest, share.size());
              if (kind == OrderKind::kQuasiRandom) {
                concatenated.insert(concatenated.end(), share.begin(), share.end());
              } else {
                for (std::uint64_t i = 0; i < share.size(); ++i) {
                  REQUIRE(i * world + rank < global.size());
                  CHECK(share[i] == global[i * world + rank]);
                }
              }
              all.insert(all.end(), share.begin(), share.end());
              CHECK(order.smallest_rank_size() == global.size() / world);
            }
            options.rank = 0;
            CHECK(largest - smallest <= 1);
            CHECK(sorted(all) == sorted(global));
            if (kind == OrderKind::kQuasiRandom) CHECK(concatenated == global);
          }
        }
      }
    }
  }
}

TEST_CASE("QUASI_RANDOM keeps at most window_pages pages open", "[order]") {
  const Indices pages = make_pages(20000, 100);
  for (std::uint64_t window : {1, 4, 32}) {
    INFO("window " << window);
    OrderOptions options = make_options(OrderKind::kQuasiRandom, 5);
    options.window_pages = window;
    const TraversalOrder order(options, pages);
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      const Indices served = order.global_order(epoch);
      const std::uint64_t open = max_open_pages(served, [&](std::uint64_t s) { return pages[s]; });
      CHECK(open <= window);
      CHECK(open >= (window + 1) / 2);
    }
  }
  // The default window is 2 x batch_size.
  OrderOptions options = make_options(OrderKind::kQuasiRandom, 5);
  options.batch_size = 8;
  const Indices served = TraversalOrder(options, pages).global_order(0);
  CHECK(max_open_pages(served, [&](std::uint64_t s) { return pages[s]; }) <= 16);
}

TEST_CASE("QUASI_RANDOM groups samples without heap data into virtual pages", "[order]") {
  // No sample has heap data: virtual page k holds samples [256k, 256k + 256).
  const Indices pages(5000, kNoPage);
  OrderOptions options = make_options(OrderKind::kQuasiRandom, 11);
  options.window_pages = 3;
  const Indices served = TraversalOrder(options, pages).global_order(0);
  CHECK(sorted(served) == first_indices(pages.size()));
  CHECK(max_open_pages(served, [](std::uint64_t s) { return s / kVirtualPageSamples; }) <= 3);

  // Mixed: a third of the samples have no heap data; all are still emitted exactly once.
  const Indices mixed = make_pages(4000, 40, 3);
  options.window_pages = 0;
  options.batch_size = 2;
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    CHECK(sorted(TraversalOrder(options, mixed).global_order(epoch)) == first_indices(4000));
  }
}

TEST_CASE("QUASI_RANDOM batches touch fewer pages than RANDOM, more than SEQUENTIAL", "[order]") {
  // 200 pages of 100 samples.
  const Indices pages = make_pages(20000, 100);
  constexpr std::uint64_t kBatch = 32;
  auto diversity = [&](OrderKind kind, std::uint64_t window) {
    OrderOptions options = make_options(kind, 21);
    options.batch_size = kBatch;
    options.window_pages = window;
    return measure_batch_diversity(TraversalOrder(options, pages).global_order(0), kBatch, pages);
  };
  const BatchDiversity sequential = diversity(OrderKind::kSequential, 0);
  const BatchDiversity random = diversity(OrderKind::kRandom, 0);
  const BatchDiversity narrow = diversity(OrderKind::kQuasiRandom, 4);
  const BatchDiversity wide = diversity(OrderKind::kQuasiRandom, 0);  // 64 pages
  INFO("distinct pages per batch: sequential " << sequential.mean_distinct_pages << ", random "
                                               << random.mean_distinct_pages << ", quasi(4) "
                                               << narrow.mean_distinct_pages << ", quasi(64) "
                                               << wide.mean_distinct_pages);
  CHECK(sequential.batches == 20000 / kBatch);
  CHECK(random.batches == 20000 / kBatch);
  // Batch b of SEQUENTIAL spans one page, or two when it crosses a page boundary.
  CHECK(sequential.mean_distinct_pages < 1.5);
  CHECK(random.mean_distinct_pages > 25);  // expected 200 (1 - (199/200)^32) ~ 29.6
  CHECK(random.mean_distinct_page_fraction == Approx(random.mean_distinct_pages / kBatch));
  // At most 4 pages are open, but a page drained mid-batch hands its slot to a new one.
  CHECK(narrow.mean_distinct_pages < 5.0);
  CHECK(narrow.mean_distinct_pages > 2 * sequential.mean_distinct_pages);
  CHECK(narrow.mean_distinct_pages < random.mean_distinct_pages / 5);
  CHECK(wide.mean_distinct_pages > narrow.mean_distinct_pages);
  CHECK(wide.mean_distinct_pages < random.mean_distinct_pages);
}

TEST_CASE("measure_batch_diversity counts full batches only", "[order]") {
  const Indices pages = {0, 0, 1, 1, kNoPage, kNoPage, 2};
  // Batches {0, 2}, {4, 5} (one virtual page), {1, 6}; the partial batch {3} is left out.
  const BatchDiversity d = measure_batch_diversity({0, 2, 4, 5, 1, 6, 3}, 2, pages);
  CHECK(d.batches == 3);
  CHECK(d.mean_distinct_pages == Approx(5.0 / 3));
  CHECK(d.mean_distinct_page_fraction == Approx(5.0 / 6));
  // A virtual page never equals a real page with the same number.
  CHECK(measure_batch_diversity({0, 4}, 2, pages).mean_distinct_pages == Approx(2));
  const BatchDiversity none = measure_batch_diversity({0}, 2, pages);
  CHECK(none.batches == 0);
  CHECK(none.mean_distinct_pages == 0);
  CHECK_THROWS_AS(measure_batch_diversity({0, 1}, 0, pages), ConfigError);
  CHECK_THROWS_AS(measure_batch_diversity({0, 7}, 2, pages), ConfigError);
}

TEST_CASE("empty selections give empty orders", "[order]") {
  for (OrderKind kind : kAllKinds) {
    OrderOptions options = make_options(kind);
    options.world_size = 3;
    options.rank = 2;
    const TraversalOrder empty_dataset(options, {});
    CHECK(empty_dataset.global_order(0).empty());
    CHECK(empty_dataset.epoch_order(1).empty());
    CHECK(empty_dataset.rank_size() == 0);
    options.indices = Indices{};
    const TraversalOrder empty_subset(options, make_pages(10, 2));
    CHECK(empty_subset.epoch_order(0).empty());
    CHECK(empty_subset.smallest_rank_size() == 0);
  }
}

TEST_CASE("bad order options are refused", "[order]") {
  const Indices pages = make_pages(10, 2);
  auto build = [&](OrderOptions options) { return TraversalOrder(std::move(options), pages); };
  OrderOptions options;
  options.world_size = 0;
  CHECK_THROWS_AS(build(options), ConfigError);
  options.world_size = 2;
  options.rank = 2;
  CHECK_THROWS_WITH(build(options), Catch::Contains("rank 2"));
  options.rank = 1;
  CHECK_NOTHROW(build(options));
  options.batch_size = 0;
  CHECK_THROWS_AS(build(options), ConfigError);
  options.batch_size = 1;
  options.indices = Indices{1, 10};
  CHECK_THROWS_WITH(build(options), Catch::Contains("indices[1] = 10 is out of range"));
  options.indices = Indices{9, 0};
  CHECK_NOTHROW(build(options));
}

TEST_CASE("QUASI_RANDOM orders 1.28M samples quickly", "[order]") {
  // ImageNet-like: 1.28M samples of ~20 KiB in 8 MiB pages, about 400 samples a page.
  constexpr std::uint64_t kSamples = 1281167;
  const Indices pages = make_pages(kSamples, 400);
  OrderOptions options = make_options(OrderKind::kQuasiRandom, 2024);
  options.batch_size = 512;  // window of 1024 pages
  const TraversalOrder order(options, pages);
  const auto start = std::chrono::steady_clock::now();
  const Indices served = order.global_order(0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream message;
  message << "QUASI_RANDOM order of " << kSamples << " samples (" << (kSamples + 399) / 400
          << " pages, window 1024): " << seconds * 1000 << " ms";
  WARN(message.str());
  REQUIRE(served.size() == kSamples);
  CHECK(sorted(served) == first_indices(kSamples));
  const BatchDiversity d = measure_batch_diversity(served, 512, pages);
  INFO("distinct pages per batch: " << d.mean_distinct_pages);
  CHECK(d.mean_distinct_pages < 512);
}
