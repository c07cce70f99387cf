#include "read_ahead.hpp"

#include <algorithm>

namespace ffcv {

ReadAhead::ReadAhead(const SampleSource& source, std::uint64_t distance)
    : source_(source), distance_(distance), limit_(std::min(distance, source.size())) {
  thread_ = std::thread([this] { run(); });
}

void ReadAhead::claimed(std::uint64_t index) {
  const std::uint64_t limit = std::min(index + 1 + distance_, source_.size());
  {
    const std::lock_guard lock(mutex_);
    if (limit <= limit_) return;
    limit_ = limit;
    // A sleeping thread is woken for a batch of hints, not for each claim (a wake per sample
    // took a context switch per sample from the encoders' cores), or for the last ones.
    if (!waiting_ || (limit_ < waiting_at_ + kWakeBatch && limit_ < source_.size())) return;
  }
  changed_.notify_one();
}

void ReadAhead::stop() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ReadAhead::run() {
  std::uint64_t next = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    waiting_ = true;
    waiting_at_ = next;
    changed_.wait(lock, [&] { return stop_ || next < limit_; });
    waiting_ = false;
    if (stop_) return;
    const std::uint64_t end = limit_;
    lock.unlock();
    try {
      for (; next < end; ++next) source_.prefetch(next);
    } catch (...) {
      return;  // hints are optional: the write goes on without them
    }
    lock.lock();
  }
}

}  // namespace ffcv
