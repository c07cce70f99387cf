// OrderedPreparers: a few threads that take items from a source one at a time, prepare them side
// by side, and hand them out in the order they were taken.
//
// What it is for: preparing a batch may cost a thread far more than taking it (DeviceTransfer
// with decode_crops: nvJPEG parses every JPEG of the batch and waits for the JPEG engines), so
// one thread preparing batch after batch bounds the feed; two overlap those costs while the
// consumer still sees the loader's order.
//
// Protocol:
//   take     called by one thread at a time, under a lock, so the positions it gives out (0, 1,
//            2, ...) follow the source's order; returns nullopt at the source's end. A thread
//            takes only while fewer than `lead` items are taken and not yet handed out.
//   prepare  called by the threads side by side, with the thread's index (0 .. threads - 1),
//            e.g. to pick that thread's CUDA stream.
//   next()   the consumer's side: the item at the next position once it is prepared, nullopt
//            once the source ended there.
// Errors: an exception from take or prepare is kept with its position. next() still returns the
// items before it, then throws it, and throws it again on every later call; no thread takes
// anything after a failure. Stopping: stop_and_join() (also run by the destructor) tells the
// threads to stop, calls `interrupt` so that a take() waiting in the source returns or throws,
// and joins them; items prepared and not handed out are destroyed with this object, so their
// owner can first wait for whatever still reads them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace ffcv {

template <typename Taken, typename Item>
class OrderedPreparers {
 public:
  struct Steps {
    std::function<std::optional<Taken>()> take;
    std::function<Item(Taken, std::size_t thread)> prepare;
    std::function<void()> interrupt;
  };

  OrderedPreparers(std::size_t threads, std::uint64_t lead, Steps steps)
      : lead_(lead < 1 ? 1 : lead), steps_(std::move(steps)) {
    try {
      for (std::size_t k = 0; k < threads; ++k) threads_.emplace_back([this, k] { run(k); });
    } catch (...) {
      stop_and_join();  // the threads already started, before this object is gone
      throw;
    }
  }
  ~OrderedPreparers() { stop_and_join(); }
  OrderedPreparers(const OrderedPreparers&) = delete;
  OrderedPreparers& operator=(const OrderedPreparers&) = delete;

  std::optional<Item> next() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
      return ready_.count(handed_) > 0 || (error_ && error_at_ <= handed_) ||
             (end_at_ && *end_at_ <= handed_) || stopping_;
    });
    const auto found = ready_.find(handed_);
    if (found == ready_.end()) {
      if (error_ && error_at_ <= handed_) std::rethrow_exception(error_);
      return std::nullopt;
    }
    Item item = std::move(found->second);
    ready_.erase(found);
    ++handed_;
    lock.unlock();
    changed_.notify_all();
    return item;
  }

  void stop_and_join() {
    const std::lock_guard joining(join_mutex_);  // a second caller waits for the first
    {
      const std::lock_guard lock(mutex_);
      if (joined_) return;
      stopping_ = true;
    }
    changed_.notify_all();
    if (steps_.interrupt) steps_.interrupt();
    for (std::thread& thread : threads_) thread.join();
    const std::lock_guard lock(mutex_);
    joined_ = true;
  }

 private:
  void fail(std::uint64_t position, std::exception_ptr error) {
    const std::lock_guard lock(mutex_);
    if (!error_ || position < error_at_) {
      error_ = std::move(error);
      error_at_ = position;
    }
    changed_.notify_all();
  }

  void run(std::size_t thread) {
    for (;;) {
      std::optional<Taken> taken;
      std::uint64_t position = 0;
      {
        const std::lock_guard take(take_mutex_);
        {
          std::unique_lock lock(mutex_);
          changed_.wait(lock,
                        [&] { return stopping_ || end_at_ || error_ || taken_ - handed_ < lead_; });
          if (stopping_ || end_at_ || error_) return;
          position = taken_;
        }
        try {
          taken = steps_.take();
        } catch (...) {
          fail(position, std::current_exception());
          return;
        }
        const std::lock_guard lock(mutex_);
        if (!taken) {
          end_at_ = position;
          changed_.notify_all();
          return;
        }
        ++taken_;
        if (stopping_) return;
      }
      try {
        Item item = steps_.prepare(std::move(*taken), thread);
        const std::lock_guard lock(mutex_);
        ready_.emplace(position, std::move(item));  // (an Item lost here cleans up after itself)
      } catch (...) {
        fail(position, std::current_exception());
        return;
      }
      changed_.notify_all();
    }
  }

  const std::uint64_t lead_;
  Steps steps_;
  std::mutex join_mutex_;  // stop_and_join() once at a time
  std::mutex take_mutex_;  // one thread takes at a time
  std::mutex mutex_;       // everything below
  std::condition_variable changed_;
  std::uint64_t taken_ = 0, handed_ = 0;
  std::map<std::uint64_t, Item> ready_;
  std::optional<std::uint64_t> end_at_;
  std::exception_ptr error_;
  std::uint64_t error_at_ = 0;
  bool stopping_ = false, joined_ = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace ffcv
