#include "ffcv/util/thread_group.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "ffcv/util/cpu_count.hpp"

namespace ffcv {

void ThreadGroup::start(int count, const std::function<void(int)>& body) {
  threads_.reserve(threads_.size() + static_cast<std::size_t>(std::max(0, count)));
  for (int i = 0; i < count; ++i) threads_.emplace_back(body, i);
}

void ThreadGroup::join() {
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void parallel_for(std::uint64_t n, int workers, const std::function<void(std::uint64_t)>& body,
                  const std::function<void(std::uint64_t)>& on_tick,
                  std::chrono::milliseconds tick) {
  if (n == 0) return;
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable finished;
  const int count = static_cast<int>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(resolve_worker_count(workers)), n));
  int running = count;
  std::exception_ptr error;
  auto fail = [&](std::exception_ptr e) {
    std::lock_guard lock(mutex);
    if (!error) error = e;
    stop = true;
  };
  ThreadGroup group;
  auto run = [&](int) {
    try {
      for (std::uint64_t k = next++; k < n && !stop; k = next++) {
        body(k);
        ++done;
      }
    } catch (...) {
      fail(std::current_exception());
    }
    std::lock_guard lock(mutex);
    if (--running == 0) finished.notify_all();
  };
  try {
    group.start(count, run);
  } catch (...) {
    // The threads already started stop at their next index; the refusal is thrown after them.
    fail(std::current_exception());
    std::lock_guard lock(mutex);
    running -= count - group.size();
  }
  {
    std::unique_lock lock(mutex);
    while (running > 0) {
      finished.wait_for(lock, tick, [&] { return running == 0; });
      if (running == 0 || !on_tick || stop) continue;
      lock.unlock();
      try {
        on_tick(done.load());
      } catch (...) {
        fail(std::current_exception());
      }
      lock.lock();
    }
  }
  group.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ffcv
