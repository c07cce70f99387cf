// Soak: loaders and iterators created and destroyed in several threads at once, as a grid search
// does, for a bounded time; afterwards the process holds as many threads and file descriptors as
// before, and its memory stops growing. Under ThreadSanitizer (tools/sanitize.sh thread) this is
// also the engine's race detector run.
//
// FFCV_SOAK_SECONDS sets the time (default 3 s); FFCV_SOAK_REPORT names a JSON file for the
// figures (results/reliability.md).
#include <dirent.h>
#include <malloc.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/util/thread_group.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

// Sanitizers keep freed memory aside (ASan's quarantine) or shadow it, so RSS says nothing of
// leaks under them; there LeakSanitizer checks for leaks instead.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

int open_descriptors() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count - 1;  // the one opendir holds
}

// A number from /proc/self/status ("Threads", "VmRSS" in KiB).
long status_number(const std::string& key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(key + ":", 0) == 0)
      return std::strtol(line.c_str() + key.size() + 1, nullptr, 10);
  }
  return -1;
}

double soak_seconds() {
  const char* text = std::getenv("FFCV_SOAK_SECONDS");
  return text ? std::atof(text) : 3.0;
}

// One loader's life with random settings: some epochs run to the end, some are dropped early.
std::uint64_t one_loader(const std::string& path, std::mt19937_64& random) {
  LoaderOptions options;
  options.batch_size = 1 + random() % 16;
  options.num_workers = 1 + static_cast<int>(random() % 3);
  options.batches_ahead = random() % 4;
  options.drop_last = random() % 2;
  options.order.kind = static_cast<OrderKind>(random() % 3);
  options.order.seed = random() % 5;
  options.os_cache = random() % 2;
  options.cache.budget_bytes = 8u << 20;
  options.cache.reader_threads = 1 + static_cast<int>(random() % 3);
  Loader loader(path, {}, options);
  std::uint64_t batches = 0;
  const int epochs = 1 + static_cast<int>(random() % 3);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    auto iterator = loader.epoch(epoch);
    const std::uint64_t stop_after = random() % 2 ? ~std::uint64_t{0} : random() % 4;
    for (std::uint64_t b = 0; b < stop_after; ++b) {
      auto batch = iterator.next();
      if (!batch) break;
      ++batches;
    }
  }
  return batches;
}

}  // namespace

TEST_CASE("loaders made and dropped in many threads leave no thread, descriptor or memory behind",
          "[soak][loader]") {
  test::TempDir dir;
  const std::string path = dir.file("soak.beton");
  DatasetWriter(
      path, {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}},
      {.page_size = 2u << 20, .num_workers = 1})
      .write(test::FunctionSource(96, [](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(24, 20, i),
                                       static_cast<std::int64_t>(i % 10)};
      }));

  // Warm up once (thread-local decoders, allocator arenas), then take the starting level.
  std::mt19937_64 warm(1);
  one_loader(path, warm);
  ::malloc_trim(0);
  const int threads_before = static_cast<int>(test::thread_count());
  const int fds_before = open_descriptors();
  const long rss_before = status_number("VmRSS");

  const double seconds = soak_seconds();
  const int shape = 4;  // loaders alive at once, as a grid's points
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> loaders{0}, batches{0};
  std::atomic<long> rss_half{0};
  long peak_threads = threads_before;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  {
    ThreadGroup group;
    group.start(shape, [&](int t) {
      std::mt19937_64 random(100 + t);
      while (!stop) {
        batches += one_loader(path, random);
        ++loaders;
      }
    });
    while (elapsed() < seconds) {
      peak_threads = std::max(peak_threads, status_number("Threads"));
      if (rss_half == 0 && elapsed() >= seconds / 2) rss_half = status_number("VmRSS");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop = true;
  }
  ::malloc_trim(0);
  const int threads_after =
      static_cast<int>(test::thread_count_back_to(static_cast<std::size_t>(threads_before)));
  const int fds_after = open_descriptors();
  const long rss_after = status_number("VmRSS");

  std::printf(
      "soak: %.1f s, %llu loaders, %llu batches in %d threads; threads %d -> peak %ld -> %d; "
      "descriptors %d -> %d; RSS %ld KiB -> %ld KiB at half time -> %ld KiB\n",
      elapsed(), static_cast<unsigned long long>(loaders.load()),
      static_cast<unsigned long long>(batches.load()), shape, threads_before, peak_threads,
      threads_after, fds_before, fds_after, rss_before, rss_half.load(), rss_after);
  if (const char* report = std::getenv("FFCV_SOAK_REPORT")) {
    std::ofstream(report) << "{\"seconds\": " << elapsed() << ", \"loaders\": " << loaders
                          << ", \"batches\": " << batches << ", \"threads_at_once\": " << shape
                          << ", \"threads_before\": " << threads_before
                          << ", \"threads_peak\": " << peak_threads
                          << ", \"threads_after\": " << threads_after
                          << ", \"fds_before\": " << fds_before << ", \"fds_after\": " << fds_after
                          << ", \"rss_kib_before\": " << rss_before
                          << ", \"rss_kib_half\": " << rss_half
                          << ", \"rss_kib_after\": " << rss_after << "}\n";
  }
  CHECK(loaders > std::uint64_t(shape));
  CHECK(peak_threads > threads_before);  // the loaders did run workers
  CHECK(threads_after == threads_before);
  CHECK(fds_after == fds_before);
  // No growth in the second half beyond allocator noise (a leak of one batch slot per loader
  // would add megabytes here).
  if (kRssMeaningful && rss_half > 0) CHECK(rss_after - rss_half < 16 * 1024);
}
