// PageSource: MmapSource and ProcessCache over plain files of known bytes.
//
// A PageSource only reads pages [k * P, (k + 1) * P) of a file (the last one may be short), so
// these tests use small page sizes and files of a known byte pattern rather than .beton files.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ffcv/storage/page_source.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

namespace ffcv {
namespace {

using Clock = std::chrono::steady_clock;
using Schedule = std::vector<std::vector<std::uint64_t>>;

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kFileSize = 10 * kPage + kPage / 2;  // 10.5 pages: the last one is short
constexpr std::uint64_t kNumPages = 11;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::uint8_t pattern(std::uint64_t offset) {
  return static_cast<std::uint8_t>(((offset * 2654435761u) >> 11) ^ (offset / kPage));
}

// A fresh directory holding one file of `size` pattern bytes; removed at scope exit.
class PatternFile {
 public:
  explicit PatternFile(std::uint64_t size = kFileSize) {
    std::string dir = (std::filesystem::temp_directory_path() / "ffcv-pages-XXXXXX").string();
    dir_ = ::mkdtemp(dir.data());
    path_ = dir_ + "/data.bin";
    rewrite(size);
  }
  ~PatternFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void rewrite(std::uint64_t size) const {
    std::vector<char> bytes(size);
    for (std::uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(pattern(i));
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  void truncate(std::uint64_t size) const { std::filesystem::resize_file(path_, size); }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

std::uint64_t page_length(std::uint64_t page, std::uint64_t file_size = kFileSize) {
  return std::min(kPage, file_size - page * kPage);
}

// Checks every page of `batch` in full and in two slices against the pattern.
void check_batch(const PageSource& source, const Schedule& schedule, std::uint64_t batch) {
  for (const std::uint64_t page : schedule[batch]) {
    const std::uint64_t start = page * kPage;
    const std::uint64_t length = page_length(page);
    const auto whole = source.bytes(start, length);
    REQUIRE(whole.size() == length);
    bool equal = true;
    for (std::uint64_t i = 0; i < length; ++i) equal = equal && whole[i] == pattern(start + i);
    REQUIRE(equal);
    const auto slice = source.bytes(start + 100, 37);
    REQUIRE(slice.size() == 37);
    CHECK(slice[0] == pattern(start + 100));
    CHECK(slice[36] == pattern(start + 136));
    const auto tail = source.bytes(start + length - 1, 1);
    CHECK(tail[0] == pattern(start + length - 1));
  }
}

// Runs a whole epoch on one thread: acquire each batch, check it, release it.
void run_epoch(PageSource& source, const Schedule& schedule, std::uint64_t in_flight = 1) {
  source.begin_epoch(schedule, in_flight);
  for (std::uint64_t b = 0; b < schedule.size(); ++b) {
    source.acquire(b);
    check_batch(source, schedule, b);
    source.release(b);
  }
  source.end_epoch();
}

// Batch b reads pages b/2 and (b+1)/2: neighbouring batches share pages, as in SEQUENTIAL.
Schedule sequential_schedule() {
  Schedule schedule;
  for (std::uint64_t b = 0; b < 2 * kNumPages - 1; ++b) {
    std::vector<std::uint64_t> pages{b / 2};
    if ((b + 1) / 2 != b / 2) pages.push_back((b + 1) / 2);
    schedule.push_back(pages);
  }
  return schedule;
}

// Each batch reads 3 distinct random pages: far apart uses, as in RANDOM.
Schedule random_schedule(std::uint64_t batches, std::uint32_t seed) {
  std::mt19937 random(seed);
  Schedule schedule;
  for (std::uint64_t b = 0; b < batches; ++b) {
    std::vector<std::uint64_t> pages;
    while (pages.size() < 3) {
      const std::uint64_t page = random() % kNumPages;
      if (std::find(pages.begin(), pages.end(), page) == pages.end()) pages.push_back(page);
    }
    std::sort(pages.begin(), pages.end());
    schedule.push_back(pages);
  }
  return schedule;
}

// Batch b reads 2 random pages of a window of 4 that slides along the file, as in QUASI_RANDOM.
Schedule windowed_schedule(std::uint64_t batches, std::uint32_t seed) {
  std::mt19937 random(seed);
  Schedule schedule;
  for (std::uint64_t b = 0; b < batches; ++b) {
    const std::uint64_t window = b * (kNumPages - 3) / batches;
    std::vector<std::uint64_t> pages;
    while (pages.size() < 2) {
      const std::uint64_t page = window + random() % 4;
      if (std::find(pages.begin(), pages.end(), page) == pages.end()) pages.push_back(page);
    }
    std::sort(pages.begin(), pages.end());
    schedule.push_back(pages);
  }
  return schedule;
}

std::uint64_t distinct_pages(const Schedule& schedule) {
  std::vector<std::uint64_t> all;
  for (const auto& pages : schedule) all.insert(all.end(), pages.begin(), pages.end());
  std::sort(all.begin(), all.end());
  return static_cast<std::uint64_t>(std::unique(all.begin(), all.end()) - all.begin());
}

// The smallest budget, in whole pages, that begin_epoch accepts for `schedule`.
std::uint64_t minimal_budget_pages(const std::string& path, const Schedule& schedule,
                                   std::uint64_t in_flight) {
  for (std::uint64_t pages = 1; pages <= kNumPages; ++pages) {
    auto cache = make_process_cache(path, kPage, {pages * kPage, 1, {}});
    try {
      cache->begin_epoch(schedule, in_flight);
      return pages;
    } catch (const ConfigError&) {
    }
  }
  FAIL("no budget up to the whole file is accepted");
  return 0;
}

TEST_CASE("mmap source gives the file's bytes", "[pages]") {
  const PatternFile file;
  auto source = make_mmap_source(file.path(), kPage);
  CHECK(source->describe() == "mmap");
  const Schedule schedule = random_schedule(12, 1);
  run_epoch(*source, schedule);
  run_epoch(*source, sequential_schedule(), 3);
  CHECK(source->bytes(kFileSize - 5, 5).size() == 5);
  CHECK(source->bytes(kFileSize, 0).empty());
  CHECK_THROWS_AS(source->bytes(kFileSize - 5, 6), FormatError);
  CHECK_THROWS_AS(source->bytes(kFileSize + 1, 0), FormatError);
  CHECK_THROWS_AS(source->bytes(~std::uint64_t{0}, 2), FormatError);
  CHECK_THROWS_AS(source->acquire(0), ConfigError);  // no epoch
  source->begin_epoch(schedule, 2);
  source->acquire(0);
  CHECK_THROWS_AS(source->acquire(0), ConfigError);   // twice
  CHECK_THROWS_AS(source->acquire(12), ConfigError);  // no such batch
  CHECK_THROWS_AS(source->release(1), ConfigError);   // not acquired
  source->release(0);
  source->end_epoch();
  source->release(1);  // ignored once the epoch has ended
  const PageSourceStats stats = source->stats();
  CHECK(stats.bytes_read == 0);
  CHECK(stats.resident_bytes == 0);
  CHECK_THROWS_AS(make_mmap_source(file.path() + ".missing", kPage), IoError);
}

TEST_CASE("process cache gives the file's bytes and frees every page", "[pages]") {
  const PatternFile file;
  auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 3, {}});
  const Schedule schedule = random_schedule(15, 2);
  run_epoch(*cache, schedule, 2);
  PageSourceStats stats = cache->stats();
  CHECK(stats.pages_loaded == distinct_pages(schedule));
  CHECK(stats.pages_freed == stats.pages_loaded);
  CHECK(stats.resident_bytes == 0);
  CHECK(stats.peak_resident_bytes <= kNumPages * kPage);

  // A second epoch over the same source, including the short last page.
  const Schedule all_pages{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10}};
  run_epoch(*cache, all_pages, 1);
  stats = cache->stats();
  CHECK(stats.resident_bytes == 0);
  CHECK(stats.pages_freed == stats.pages_loaded);

  // Pages stay readable until released; outside that, bytes() refuses.
  cache->begin_epoch(all_pages, 1);
  cache->acquire(0);
  CHECK_THROWS_AS(cache->bytes(kPage - 4, 8), FormatError);      // crosses a page
  CHECK_THROWS_AS(cache->bytes(kFileSize - 2, 4), FormatError);  // beyond the file
  CHECK_THROWS_AS(cache->bytes(10 * kPage + kPage - 2, 1), FormatError);
  CHECK_THROWS_AS(cache->acquire(0), ConfigError);  // twice
  CHECK_THROWS_AS(cache->acquire(3), ConfigError);  // no such batch
  CHECK_THROWS_AS(cache->release(1), ConfigError);  // not acquired
  cache->release(0);
  CHECK_THROWS_AS(cache->bytes(kPage, 10), ConfigError);
  cache->end_epoch();
  CHECK(cache->stats().resident_bytes == 0);
  CHECK_THROWS_AS(cache->acquire(0), ConfigError);  // no epoch
  cache->release(0);                                // ignored once the epoch has ended
}

TEST_CASE("process cache reads SEQUENTIAL-like schedules once, within a minimal budget",
          "[pages]") {
  const PatternFile file;
  const Schedule schedule = sequential_schedule();
  // Page p is used by batches 2p-1 .. 2p+1; with 2 batches in flight about 3 pages are live.
  const std::uint64_t budget_pages = minimal_budget_pages(file.path(), schedule, 2);
  CHECK(budget_pages <= 3);
  CHECK(budget_pages >= 2);
  for (const int readers : {1, 4}) {
    auto cache = make_process_cache(file.path(), kPage, {budget_pages * kPage, readers, {}});
    run_epoch(*cache, schedule, 2);
    const PageSourceStats stats = cache->stats();
    CHECK(stats.pages_loaded == kNumPages);
    CHECK(stats.bytes_read == kFileSize);
    CHECK(stats.peak_resident_bytes <= budget_pages * kPage);
    CHECK(stats.resident_bytes == 0);
  }
}

TEST_CASE("process cache refuses a RANDOM-like schedule its budget cannot hold", "[pages]") {
  const PatternFile file;
  auto cache = make_process_cache(file.path(), kPage, {2 * kPage, 2, {}});
  try {
    cache->begin_epoch(random_schedule(30, 3), 2);
    FAIL("begin_epoch accepted a schedule that needs more than the budget");
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    INFO(message);
    CHECK(message.find("8192 bytes") != std::string::npos);  // the budget
    CHECK(message.find("needs") != std::string::npos);
    CHECK(message.find("QUASI_RANDOM") != std::string::npos);
    CHECK(message.find("mmap") != std::string::npos);
    CHECK(message.find(std::to_string(kFileSize)) != std::string::npos);
  }
  // The source is still usable.
  run_epoch(*cache, {{0}, {0, 1}, {1}}, 1);
  CHECK(cache->stats().resident_bytes == 0);
}

TEST_CASE("process cache never exceeds its budget and releases in any order", "[pages]") {
  const PatternFile file;
  const Schedule schedule = windowed_schedule(40, 4);
  constexpr std::uint64_t kInFlight = 3;
  const std::uint64_t budget = minimal_budget_pages(file.path(), schedule, kInFlight) * kPage;
  CHECK(budget < kFileSize);  // the readers must wait for releases
  auto cache = make_process_cache(file.path(), kPage, {budget, 4, {0.0005, 0}});

  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> highest{0};
  std::thread watcher([&] {
    while (!done.load()) {
      highest = std::max<std::uint64_t>(highest, cache->stats().resident_bytes);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  for (int epoch = 0; epoch < 3; ++epoch) {
    cache->begin_epoch(schedule, kInFlight);
    // Hold kInFlight batches at a time, then release them newest first.
    for (std::uint64_t first = 0; first < schedule.size(); first += kInFlight) {
      const std::uint64_t end = std::min<std::uint64_t>(first + kInFlight, schedule.size());
      for (std::uint64_t b = first; b < end; ++b) {
        cache->acquire(b);
        check_batch(*cache, schedule, b);
      }
      for (std::uint64_t b = end; b-- > first;) cache->release(b);
    }
    CHECK(cache->stats().resident_bytes == 0);
    cache->end_epoch();
  }
  done = true;
  watcher.join();
  const PageSourceStats stats = cache->stats();
  CHECK(highest.load() <= budget);
  CHECK(stats.peak_resident_bytes <= budget);
  CHECK(stats.pages_freed == stats.pages_loaded);
  CHECK(stats.resident_bytes == 0);
}

TEST_CASE("process cache serves concurrent workers", "[pages]") {
  const PatternFile file;
  const Schedule schedule = random_schedule(60, 5);
  auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 4, {}});
  for (int epoch = 0; epoch < 3; ++epoch) {
    cache->begin_epoch(schedule, 4);
    std::atomic<std::uint64_t> next{0};
    std::atomic<int> failures{0};
    std::mutex order;  // hand out batch numbers in increasing order of acquire calls
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; ++w) {
      workers.emplace_back([&] {
        while (true) {
          std::uint64_t b;
          {
            std::lock_guard lock(order);
            b = next++;
            if (b >= schedule.size()) return;
          }
          cache->acquire(b);
          for (const std::uint64_t page : schedule[b]) {
            const auto bytes = cache->bytes(page * kPage, page_length(page));
            for (std::uint64_t i = 0; i < bytes.size(); ++i) {
              if (bytes[i] != pattern(page * kPage + i)) ++failures;
            }
          }
          cache->release(b);
        }
      });
    }
    for (std::thread& worker : workers) worker.join();
    CHECK(failures.load() == 0);
    CHECK(cache->stats().resident_bytes == 0);
  }
}

TEST_CASE("process cache acquire waits for slow storage", "[pages]") {
  const PatternFile file;
  auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 1, {0.02, 0}});
  CHECK(cache->describe() == "process cache (budget 44 KiB, 1 reader, latency 20 ms)");
  const Schedule schedule{{0}, {1}, {2}, {3}};
  run_epoch(*cache, schedule);
  const PageSourceStats stats = cache->stats();
  CHECK(stats.acquire_wait_seconds > 0.01);
  CHECK(stats.storage_seconds >= 0.02 * 4 * 0.9);
  CHECK(stats.read_calls >= 4);
  CHECK(stats.bytes_read == 4 * kPage);
}

TEST_CASE("process cache throttle caps the aggregate bandwidth", "[pages]") {
  const PatternFile file;
  constexpr double kBandwidth = 200e3;  // bytes per second: the whole file takes ~0.215 s
  auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 4, {0, kBandwidth}});
  CHECK(cache->describe() == "process cache (budget 44 KiB, 4 readers, 0.2 MB/s)");
  const Schedule schedule{{0, 1, 2}, {3, 4, 5, 6}, {7, 8, 9, 10}};
  const Clock::time_point start = Clock::now();
  run_epoch(*cache, schedule);
  const double elapsed = seconds_since(start);
  // Loose lower bound only (the first transfer may begin a little before `start`'s reading).
  CHECK(elapsed >= 0.9 * static_cast<double>(kFileSize) / kBandwidth);
  const PageSourceStats stats = cache->stats();
  CHECK(stats.bytes_read == kFileSize);
  CHECK(stats.read_calls >= kNumPages);

  ProcessCacheOptions both{std::uint64_t{512} << 20, 4, {0.005, 100e6}};
  CHECK(make_process_cache(file.path(), kPage, both)->describe() ==
        "process cache (budget 512 MiB, 4 readers, latency 5 ms, 100 MB/s)");
}

TEST_CASE("process cache reports a short file from acquire, then recovers", "[pages]") {
  const PatternFile file;
  SECTION("a schedule with pages beyond the end of the file") {
    auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage + 4 * kPage, 2, {}});
    const Schedule schedule{{0}, {1, 2}, {3, 12}, {4}};
    cache->begin_epoch(schedule, 1);
    cache->acquire(0);
    cache->release(0);
    cache->acquire(1);
    cache->release(1);
    try {
      cache->acquire(2);
      FAIL("acquire of a batch beyond the end of the file succeeded");
    } catch (const IoError& error) {
      const std::string message = error.what();
      INFO(message);
      CHECK(message.find(file.path()) != std::string::npos);
      CHECK(message.find("page 12") != std::string::npos);
    }
    cache->release(2);
    cache->acquire(3);
    check_batch(*cache, schedule, 3);
    cache->release(3);
    CHECK(cache->stats().resident_bytes == 0);
    run_epoch(*cache, {{0, 1}, {2, 10}});
  }
  SECTION("a failed batch need not be released") {
    auto cache = make_process_cache(file.path(), kPage, {4 * kPage, 2, {}});
    const Schedule schedule{{0}, {1, 2, 12}, {3}, {4}, {5}, {6}};
    cache->begin_epoch(schedule, 1);
    for (std::uint64_t b = 0; b < schedule.size(); ++b) {
      if (b == 1) {
        CHECK_THROWS_AS(cache->acquire(b), IoError);
        continue;
      }
      cache->acquire(b);
      check_batch(*cache, schedule, b);
      cache->release(b);
    }
    const PageSourceStats stats = cache->stats();
    CHECK(stats.resident_bytes == 0);
    CHECK(stats.pages_freed == stats.pages_loaded);
    CHECK_THROWS_AS(cache->release(0), ConfigError);  // released twice
    cache->release(1);                                // accepted after the failure
    CHECK_THROWS_AS(cache->release(1), ConfigError);
  }
  SECTION("a file truncated after it was opened") {
    auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 3, {}});
    file.truncate(kPage + 100);
    cache->begin_epoch({{0}, {1, 5}, {0, 2}}, 2);
    cache->acquire(0);
    CHECK(cache->bytes(0, kPage).size() == kPage);
    CHECK_THROWS_AS(cache->acquire(1), IoError);
    CHECK_THROWS_WITH(cache->acquire(2), Catch::Contains(file.path()));
    cache->release(1);
    cache->release(0);
    cache->end_epoch();
    CHECK(cache->stats().resident_bytes == 0);
    file.rewrite(kFileSize);
    run_epoch(*cache, sequential_schedule(), 2);
  }
}

TEST_CASE("process cache stops promptly with slow storage", "[pages]") {
  const PatternFile file;
  const Schedule schedule = random_schedule(20, 6);
  SECTION("destroyed mid-epoch while readers sleep in the throttle") {
    auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 4, {0.2, 0}});
    cache->begin_epoch(schedule, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const Clock::time_point start = Clock::now();
    cache.reset();
    CHECK(seconds_since(start) < 5.0);
  }
  SECTION("destroyed while readers wait for budget") {
    auto cache = make_process_cache(file.path(), kPage, {3 * kPage, 2, {}});
    cache->begin_epoch(sequential_schedule(), 1);
    cache->acquire(0);  // hold it: the readers fill the budget and wait
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(cache->stats().resident_bytes <= 3 * kPage);
    const Clock::time_point start = Clock::now();
    cache.reset();
    CHECK(seconds_since(start) < 5.0);
  }
  SECTION("end_epoch wakes an acquire that waits") {
    auto cache = make_process_cache(file.path(), kPage, {kNumPages * kPage, 1, {0.2, 0}});
    cache->begin_epoch(schedule, 2);
    std::atomic<bool> threw{false};
    std::thread consumer([&] {
      try {
        cache->acquire(0);
      } catch (const ConfigError&) {
        threw = true;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const Clock::time_point start = Clock::now();
    cache->end_epoch();
    consumer.join();
    CHECK(seconds_since(start) < 5.0);
    CHECK(threw.load());
    CHECK(cache->stats().resident_bytes == 0);
  }
}

TEST_CASE("process cache keeps no threads or memory across many epochs", "[pages]") {
  const PatternFile file(3 * kPage);
  auto cache = make_process_cache(file.path(), kPage, {3 * kPage, 2, {}});
  const Schedule schedule{{0}, {0, 1}, {2}};
  const std::size_t threads_before = test::thread_count();
  for (int epoch = 0; epoch < 1000; ++epoch) {
    cache->begin_epoch(schedule, 1);
    for (std::uint64_t b = 0; b < schedule.size(); ++b) {
      cache->acquire(b);
      cache->release(b);
    }
    if (epoch % 2 == 0) cache->end_epoch();  // otherwise the next begin_epoch ends it
  }
  cache->end_epoch();
  CHECK(test::thread_count_back_to(threads_before) == threads_before);
  const PageSourceStats stats = cache->stats();
  CHECK(stats.resident_bytes == 0);
  CHECK(stats.pages_loaded == 3000);
  CHECK(stats.pages_freed == 3000);
}

}  // namespace
}  // namespace ffcv
