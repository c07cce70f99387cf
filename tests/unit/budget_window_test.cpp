// QUASI_RANDOM within a process cache's budget: with window_pages = 0 the loader takes the largest
// window whose epochs fit the budget (FFCV's 2 x batch size keeps a small file whole), every
// epoch then stays within it, and an explicit window that does not fit is refused before any read,
// naming the window and the budget that would work.
#include <catch2/catch.hpp>

#include <string>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

constexpr std::uint64_t kMiB = 1u << 20;

// 1,200 samples of 64 KiB in 2 MiB pages: about 38 pages, 32 samples each.
std::string paged_file(const test::TempDir& dir) {
  const std::string path = dir.file("paged.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {static_cast<std::int64_t>(i), Bytes(64 << 10, static_cast<std::uint8_t>(i))};
  };
  DatasetWriter(path,
                {{"label", std::make_shared<IntField>()}, {"blob", std::make_shared<BytesField>()}},
                {.page_size = 2 * kMiB})
      .write(test::FunctionSource(1200, make));
  return path;
}

LoaderOptions quasi_random(std::uint64_t budget_bytes, std::uint64_t window_pages = 0) {
  LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 2;
  options.batches_ahead = 3;
  options.order.kind = OrderKind::kQuasiRandom;
  options.order.seed = 5;
  options.order.window_pages = window_pages;
  options.os_cache = false;
  options.cache.budget_bytes = budget_bytes;
  return options;
}

// Runs `epochs` epochs; returns the highest resident page memory the cache reported.
std::uint64_t run_epochs(Loader& loader, std::uint64_t epochs) {
  std::uint64_t peak = 0;
  for (std::uint64_t e = 0; e < epochs; ++e) {
    auto epoch = loader.epoch(e);
    while (auto batch = epoch.next()) {
    }
    peak = std::max(peak, epoch.stats().pages.peak_resident_bytes);
  }
  return peak;
}

}  // namespace

TEST_CASE("QUASI_RANDOM's window defaults to the largest the process cache's budget holds",
          "[loader][budget]") {
  test::TempDir dir;
  const std::string path = paged_file(dir);
  const std::uint64_t pages = Reader(path).file_size() / (2 * kMiB) + 1;

  Loader small(path, {}, quasi_random(16 * kMiB));
  const std::uint64_t small_window = small.options().order.window_pages;
  CHECK(small_window >= 1);
  CHECK(small_window < 8);  // 16 MiB is 8 pages, some of which batches in flight hold
  CHECK(run_epochs(small, 4) <= 16 * kMiB);

  Loader larger(path, {}, quasi_random(40 * kMiB));
  CHECK(larger.options().order.window_pages > small_window);
  CHECK(run_epochs(larger, 2) <= 40 * kMiB);

  // A budget of twice the file opens every page at once; FFCV's rule (2 x 16 = 32 pages) would
  // have needed most of the file for any budget.
  Loader whole(path, {}, quasi_random(2 * pages * 2 * kMiB));
  CHECK(whole.options().order.window_pages == pages);

  // The same settings give the same window, hence the same batches.
  CHECK(Loader(path, {}, quasi_random(16 * kMiB)).options().order.window_pages == small_window);

  // Through mmap the budget plays no part: FFCV's rule stays.
  LoaderOptions mapped = quasi_random(16 * kMiB);
  mapped.os_cache = true;
  CHECK(Loader(path, {}, mapped).options().order.window_pages == 0);
}

TEST_CASE("a QUASI_RANDOM window the budget cannot hold is refused naming the window and budget",
          "[loader][budget]") {
  test::TempDir dir;
  const std::string path = paged_file(dir);
  Loader loader(path, {}, quasi_random(16 * kMiB, 20));
  CHECK(loader.options().order.window_pages == 20);
  std::uint64_t named_mib = 0;
  try {
    loader.epoch(0);
    FAIL("an epoch that needs more than the budget was started");
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("QUASI_RANDOM with a window of 20 pages") &&
                            Catch::Contains("16 MiB") && Catch::Contains("cache_budget_mib = ") &&
                            Catch::Contains("window_pages = 0"));
    CHECK_THAT(message, !Catch::Contains("use QUASI_RANDOM"));
    const std::string key = "cache_budget_mib = ";
    named_mib = std::stoull(message.substr(message.find(key) + key.size()));
  }
  // The budget it names is enough.
  REQUIRE(named_mib > 16);
  Loader enough(path, {}, quasi_random(named_mib * kMiB, 20));
  CHECK(run_epochs(enough, 1) <= named_mib * kMiB);
}
