// ByteBufferPool (ffcv/util/byte_buffer_pool.hpp): a buffer of the size asked for every time, the
// memory of a given buffer reused (the point of the pool), the best-fitting buffer preferred so
// that large ones stay for large requests and nothing is filled again, a bounded number held, and
// takes and gives from many threads at once (also run under ThreadSanitizer).
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>
#include <vector>

#include "ffcv/util/byte_buffer_pool.hpp"

using namespace ffcv;

TEST_CASE("a pool gives buffers of the size asked for and reuses the memory given back",
          "[buffers]") {
  ByteBufferPool pool(4);
  std::vector<std::uint8_t> first = pool.take(1000);
  CHECK(first.size() == 1000);
  CHECK(pool.held() == 0);
  std::fill(first.begin(), first.end(), std::uint8_t{7});
  const std::uint8_t* memory = first.data();
  pool.give(std::move(first));
  CHECK(pool.held() == 1);

  // Smaller: the same memory, cut to size, without a new allocation.
  std::vector<std::uint8_t> smaller = pool.take(300);
  CHECK(smaller.size() == 300);
  CHECK(smaller.data() == memory);
  CHECK(pool.held() == 0);
  pool.give(std::move(smaller));

  // Larger than any held: a new buffer of that size, the held one kept for smaller requests.
  std::vector<std::uint8_t> larger = pool.take(5000);
  CHECK(larger.size() == 5000);
  CHECK(pool.held() == 1);
  CHECK(pool.take(200).data() == memory);

  // An empty pool allocates.
  std::vector<std::uint8_t> fresh = pool.take(10);
  CHECK(fresh.size() == 10);
}

TEST_CASE("a pool gives the smallest storage that holds the size, then one long enough already",
          "[buffers]") {
  ByteBufferPool pool(8);
  std::vector<std::uint8_t> small = pool.take(1000), middle = pool.take(4096),
                            large = pool.take(10000);
  const std::uint8_t* small_memory = small.data();
  const std::uint8_t* middle_memory = middle.data();
  const std::uint8_t* large_memory = large.data();
  pool.give(std::move(middle));
  pool.give(std::move(large));  // given last
  pool.give(std::move(small));

  // A small request does not take the large buffer that a large one will need.
  std::vector<std::uint8_t> for_2000 = pool.take(2000);
  CHECK(for_2000.data() == middle_memory);
  std::vector<std::uint8_t> for_500 = pool.take(500);
  CHECK(for_500.data() == small_memory);
  std::vector<std::uint8_t> for_9000 = pool.take(9000);
  CHECK(for_9000.data() == large_memory);
  CHECK(for_9000.size() == 9000);

  // Equal storage: the one already long enough wins over the most recently given.
  std::vector<std::uint8_t> long_one = pool.take(4096);
  std::vector<std::uint8_t> short_one = pool.take(4096);
  short_one.resize(100);  // its storage still holds 4096, but growing it would fill
  const std::uint8_t* long_memory = long_one.data();
  const std::uint8_t* short_memory = short_one.data();
  pool.give(std::move(long_one));
  pool.give(std::move(short_one));  // given last
  std::vector<std::uint8_t> taken = pool.take(2000);
  CHECK(taken.data() == long_memory);
  std::vector<std::uint8_t> other = pool.take(3000);
  CHECK(other.data() == short_memory);  // only its storage holds it: grown in place
  CHECK(other.size() == 3000);
}

TEST_CASE("a pool holds at most its bounds, the largest buffers first, and drops empty ones",
          "[buffers]") {
  ByteBufferPool pool(2);
  for (int i = 0; i < 5; ++i) pool.give(std::vector<std::uint8_t>(64));
  CHECK(pool.held() == 2);
  pool.give(std::vector<std::uint8_t>{});
  CHECK(pool.held() == 2);
  // A bound in bytes too: a buffer that would take the storage held past it is freed.
  ByteBufferPool by_bytes(10, 1000);
  by_bytes.give(std::vector<std::uint8_t>(600));
  by_bytes.give(std::vector<std::uint8_t>(600));
  CHECK(by_bytes.held() == 1);
  CHECK(by_bytes.held_bytes() >= 600);
  CHECK(by_bytes.held_bytes() <= 1000);
  by_bytes.give(std::vector<std::uint8_t>(300));
  CHECK(by_bytes.held() == 2);
  (void)by_bytes.take(600);  // taken out: its storage is no longer held
  CHECK(by_bytes.held() == 1);
  CHECK(by_bytes.held_bytes() < 600);
  // Full, a larger buffer takes the place of the smaller ones held; a smaller one is freed.
  ByteBufferPool by_count(2);
  by_count.give(std::vector<std::uint8_t>(100));
  by_count.give(std::vector<std::uint8_t>(200));
  std::vector<std::uint8_t> big(500);
  const std::uint8_t* big_memory = big.data();
  by_count.give(std::move(big));
  by_count.give(std::vector<std::uint8_t>(50));
  CHECK(by_count.held() == 2);
  CHECK(by_count.held_bytes() >= 700);
  CHECK(by_count.held_bytes() < 800);  // 200 and 500, of storage at least that
  CHECK(by_count.take(400).data() == big_memory);
  ByteBufferPool swap_bytes(10, 1000);
  swap_bytes.give(std::vector<std::uint8_t>(600));
  swap_bytes.give(std::vector<std::uint8_t>(300));
  swap_bytes.give(std::vector<std::uint8_t>(700));  // room only once both are dropped
  CHECK(swap_bytes.held() == 1);
  CHECK(swap_bytes.held_bytes() >= 700);
  CHECK(swap_bytes.held_bytes() <= 1000);
  ByteBufferPool none(0);
  none.give(std::vector<std::uint8_t>(64));
  CHECK(none.held() == 0);
  // Without a pool the helpers allocate and free.
  CHECK(take_buffer(nullptr, 33).size() == 33);
  give_buffer(nullptr, std::vector<std::uint8_t>(8));
}

TEST_CASE("many threads take and give at once, each buffer owned by one at a time", "[buffers]") {
  ByteBufferPool pool(16);
  std::vector<std::thread> threads;
  std::vector<int> failures(6, 0);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::size_t size = 64 + static_cast<std::size_t>((i * 7919 + t * 104729) % 4096);
        std::vector<std::uint8_t> buffer = pool.take(size);
        if (buffer.size() != size) ++failures[t];
        // Fill with this thread's mark and read it back: a buffer shared with another thread
        // would show the other's mark (and ThreadSanitizer a race).
        std::fill(buffer.begin(), buffer.end(), static_cast<std::uint8_t>(t + 1));
        if (std::any_of(buffer.begin(), buffer.end(),
                        [&](std::uint8_t b) { return b != static_cast<std::uint8_t>(t + 1); })) {
          ++failures[t];
        }
        pool.give(std::move(buffer));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const int count : failures) CHECK(count == 0);
  CHECK(pool.held() <= 16);
  CHECK(pool.held() >= 1);
}
