// ThreadGroup and parallel_for (ffcv/util/thread_group.hpp): every index runs once, the first error
// comes back after every thread joined, progress ticks come from the calling thread, and
// "0 workers" means the cores this process may use.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/thread_group.hpp"

using namespace ffcv;

TEST_CASE("parallel_for runs every index exactly once on the threads asked for", "[threads]") {
  for (const int workers : {1, 3, 0}) {
    std::vector<std::atomic<int>> runs(1000);
    std::mutex mutex;
    std::set<std::thread::id> threads;
    parallel_for(runs.size(), workers, [&](std::uint64_t k) {
      ++runs[k];
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    for (const auto& count : runs) REQUIRE(count == 1);
    CHECK(threads.count(std::this_thread::get_id()) == 0);  // the caller only waits
    CHECK(static_cast<int>(threads.size()) <= resolve_worker_count(workers));
  }
  int calls = 0;
  parallel_for(0, 4, [&](std::uint64_t) { ++calls; });
  CHECK(calls == 0);
  parallel_for(2, 8, [&](std::uint64_t) { ++calls; });  // never more threads than indices
  CHECK(calls == 2);
}

TEST_CASE("parallel_for stops at the first error and throws it after joining", "[threads]") {
  // One thread: nothing after the failing index runs.
  std::vector<std::uint64_t> ran;
  CHECK_THROWS_WITH(parallel_for(100, 1,
                                 [&](std::uint64_t k) {
                                   if (k == 10) throw std::runtime_error("index 10 failed");
                                   ran.push_back(k);
                                 }),
                    "index 10 failed");
  CHECK(ran.size() == 10);
  // Several threads: the error comes back only once no body is running any more.
  std::atomic<int> inside{0};
  std::atomic<int> inside_at_return{-1};
  CHECK_THROWS_WITH(parallel_for(2000, 4,
                                 [&](std::uint64_t k) {
                                   ++inside;
                                   std::this_thread::sleep_for(std::chrono::microseconds(200));
                                   --inside;
                                   if (k == 10) throw std::runtime_error("index 10 failed");
                                 }),
                    "index 10 failed");
  inside_at_return = inside.load();
  CHECK(inside_at_return == 0);
}

TEST_CASE("parallel_for ticks progress on the calling thread, and a failing tick stops the work",
          "[threads]") {
  std::vector<std::uint64_t> seen;
  const auto caller = std::this_thread::get_id();
  bool on_caller = true;
  parallel_for(
      20, 2, [](std::uint64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(10)); },
      [&](std::uint64_t done) {
        seen.push_back(done);
        on_caller = on_caller && std::this_thread::get_id() == caller;
      },
      std::chrono::milliseconds(5));
  CHECK(!seen.empty());
  CHECK(on_caller);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(seen.back() <= 20);
  CHECK_THROWS_WITH(
      parallel_for(
          1000, 2, [](std::uint64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); },
          [](std::uint64_t) { throw std::runtime_error("cancelled"); },
          std::chrono::milliseconds(5)),
      "cancelled");
}

TEST_CASE("a ThreadGroup joins its threads, also when it goes out of scope", "[threads]") {
  std::atomic<int> sum{0};
  {
    ThreadGroup group;
    group.start(3, [&](int i) { sum += i + 1; });
    group.start(2, [&](int i) { sum += 10 * (i + 1); });
    CHECK(group.size() == 5);
  }
  CHECK(sum == 1 + 2 + 3 + 10 + 20);
  ThreadGroup group;
  group.start(2, [&](int) { ++sum; });
  group.join();
  CHECK(group.empty());
  CHECK(sum == 38);
}
