#include "storage_throttle.hpp"

#include <algorithm>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

std::chrono::steady_clock::duration seconds_to_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

}  // namespace

ReadThrottle::ReadThrottle(StorageThrottle limits)
    : limits_(limits),
      unlimited_(limits.latency_seconds <= 0 && limits.bandwidth_bytes_per_s <= 0),
      wire_free_at_(Clock::now()) {
  // NaN fails every comparison, so test for the valid range rather than the invalid one.
  if (!(limits.latency_seconds >= 0) || !(limits.bandwidth_bytes_per_s >= 0)) {
    throw ConfigError("storage throttle: latency and bandwidth must be zero or positive");
  }
}

bool ReadThrottle::wait_for_read(std::uint64_t bytes) {
  std::unique_lock lock(mutex_);
  if (stopped_) return false;
  if (unlimited_) return true;
  const Clock::time_point now = Clock::now();
  Clock::time_point done = now + seconds_to_duration(limits_.latency_seconds);
  if (limits_.bandwidth_bytes_per_s > 0) {
    // The transfer starts once the request's latency has passed and the wire is free.
    const Clock::time_point start = std::max(done, wire_free_at_);
    done = start + seconds_to_duration(static_cast<double>(bytes) / limits_.bandwidth_bytes_per_s);
    wire_free_at_ = done;
  }
  return !wake_.wait_until(lock, done, [this] { return stopped_; });
}

void ReadThrottle::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  wake_.notify_all();
}

void ReadThrottle::reset() {
  std::lock_guard lock(mutex_);
  stopped_ = false;
  wire_free_at_ = Clock::now();
}

}  // namespace ffcv
