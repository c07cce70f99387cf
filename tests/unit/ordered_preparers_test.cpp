// OrderedPreparers (ffcv/util/ordered_preparers.hpp): items come out in the order they were
// taken while threads prepare them side by side; the lead is bounded; errors keep their
// position; the end is the source's; stopping wakes a take that waits and joins; items not handed
// out are destroyed once. Also run under ThreadSanitizer (ffcv_concurrency_tests).
#include "ffcv/util/ordered_preparers.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>

using ffcv::OrderedPreparers;
using namespace std::chrono_literals;

namespace {

struct Prepared {
  std::uint64_t value = 0;
  std::size_t thread = 0;
};

// A source of `count` numbers (nullopt after), counting how far its taker ran ahead of `handed`.
struct Counting {
  std::mutex mutex;
  std::uint64_t next = 0, count = 0, handed = 0, largest_lead = 0;
  std::optional<std::uint64_t> take() {
    const std::lock_guard lock(mutex);
    if (next == count) return std::nullopt;
    largest_lead = std::max(largest_lead, next + 1 - handed);
    return next++;
  }
};

}  // namespace

TEST_CASE("OrderedPreparers: the taken order comes out while threads prepare side by side",
          "[ordered_preparers][concurrency]") {
  Counting source;
  source.count = 200;
  // Positions 0 and 1 each wait (up to 10 s) until both are being prepared: one thread at a time
  // would never get there.
  std::mutex met_mutex;
  std::condition_variable met;
  int started = 0;
  bool side_by_side = false;
  std::atomic<int> preparing{0}, most_at_once{0};
  OrderedPreparers<std::uint64_t, Prepared> preparers(
      3, 3,
      {[&] { return source.take(); },
       [&](std::uint64_t value, std::size_t thread) {
         const int now = ++preparing;
         int seen = most_at_once.load();
         while (now > seen && !most_at_once.compare_exchange_weak(seen, now)) {
         }
         if (value < 2) {
           std::unique_lock lock(met_mutex);
           ++started;
           met.notify_all();
           if (met.wait_for(lock, 10s, [&] { return started == 2; })) side_by_side = true;
         } else {
           // Later items finish out of order: odd ones take longer.
           std::this_thread::sleep_for(std::chrono::microseconds(value % 2 ? 300 : 20));
         }
         --preparing;
         return Prepared{value * 10, thread};
       },
       {}});
  std::vector<std::size_t> threads_used(3, 0);
  for (std::uint64_t expected = 0; expected < 200; ++expected) {
    const std::optional<Prepared> item = preparers.next();
    REQUIRE(item.has_value());
    REQUIRE(item->value == expected * 10);
    REQUIRE(item->thread < 3);
    ++threads_used[item->thread];
    const std::lock_guard lock(source.mutex);
    ++source.handed;
  }
  CHECK_FALSE(preparers.next().has_value());
  CHECK_FALSE(preparers.next().has_value());  // the end stays the end
  CHECK(side_by_side);
  CHECK(most_at_once.load() >= 2);
  // At most `lead` items taken and not handed out (plus the one being taken).
  CHECK(source.largest_lead <= 4);
}

TEST_CASE("OrderedPreparers: a failed take or prepare comes after the items before it, then stays",
          "[ordered_preparers][concurrency]") {
  for (const bool in_take : {true, false}) {
    INFO((in_take ? "take" : "prepare") << " fails at position 7");
    Counting source;
    source.count = 100;
    OrderedPreparers<std::uint64_t, std::uint64_t> preparers(
        2, 2,
        {[&]() -> std::optional<std::uint64_t> {
           std::optional<std::uint64_t> value = source.take();
           if (in_take && value == 7u) throw std::runtime_error("take of 7 failed");
           return value;
         },
         [&](std::uint64_t value, std::size_t) {
           if (value == 7) {
             // Slow, so that the other thread prepares 8 before 7 fails.
             std::this_thread::sleep_for(20ms);
             throw std::runtime_error("prepare of 7 failed");
           }
           return value;
         },
         {}});
    for (std::uint64_t expected = 0; expected < 7; ++expected) {
      const std::optional<std::uint64_t> item = preparers.next();
      REQUIRE(item == expected);
    }
    const std::string message = in_take ? "take of 7 failed" : "prepare of 7 failed";
    CHECK_THROWS_WITH(preparers.next(), message);
    CHECK_THROWS_WITH(preparers.next(), message);
  }
}

TEST_CASE("OrderedPreparers: stopping wakes a take that waits, and every item is destroyed once",
          "[ordered_preparers][concurrency]") {
  auto alive = std::make_shared<std::atomic<int>>(0);
  struct Tracked {
    std::shared_ptr<std::atomic<int>> alive;
    explicit Tracked(std::shared_ptr<std::atomic<int>> counter) : alive(std::move(counter)) {
      ++*alive;
    }
    Tracked(Tracked&& other) noexcept : alive(std::move(other.alive)) {}
    Tracked& operator=(Tracked&&) = delete;
    ~Tracked() {
      if (alive) --*alive;
    }
  };
  std::mutex gate_mutex;
  std::condition_variable gate;
  bool interrupted = false;
  std::uint64_t taken = 0;
  {
    OrderedPreparers<std::uint64_t, std::unique_ptr<Tracked>> preparers(
        2, 3,
        {[&]() -> std::optional<std::uint64_t> {
           std::unique_lock lock(gate_mutex);
           if (taken < 3) return taken++;
           // The fourth take waits for the source, as a loader with no batch ready does.
           gate.wait(lock, [&] { return interrupted; });
           throw std::runtime_error("stopped");
         },
         [&](std::uint64_t, std::size_t) { return std::make_unique<Tracked>(alive); },
         [&] {
           const std::lock_guard lock(gate_mutex);
           interrupted = true;
           gate.notify_all();
         }});
    REQUIRE(preparers.next().has_value());  // one handed out, destroyed here
    // Wait until the other two are prepared and the fourth take waits.
    for (int i = 0; i < 1000 && alive->load() < 2; ++i) std::this_thread::sleep_for(5ms);
    CHECK(alive->load() == 2);
    preparers.stop_and_join();  // returns: the waiting take was woken
    CHECK(interrupted);
    CHECK(alive->load() == 2);  // prepared, not handed out: still owned
  }
  CHECK(alive->load() == 0);
}
