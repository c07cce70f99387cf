// Internal: ReadThrottle makes storage reads as slow as a StorageThrottle says.
//
// Each read request first waits `latency_seconds`; then its transfer takes bytes / bandwidth
// seconds on a single shared "wire": transfers of concurrent requests queue one after the other
// (a next-free-time schedule), so the aggregate rate over all reader threads stays at or below
// `bandwidth_bytes_per_s`, while their latencies overlap as they would on a networked store.
// Waits are condition-variable waits that stop() interrupts at once, so an epoch can be
// cancelled without waiting out a slow read.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "ffcv/storage/page_source.hpp"

namespace ffcv {

class ReadThrottle {
 public:
  explicit ReadThrottle(StorageThrottle limits);

  // True when reads go through unchanged (no latency, unlimited bandwidth).
  bool unlimited() const { return unlimited_; }
  const StorageThrottle& limits() const { return limits_; }

  // Waits as long as the storage would take to serve a read of `bytes` bytes. Returns false
  // when stop() interrupted the wait (or had been called before it), true otherwise.
  bool wait_for_read(std::uint64_t bytes);

  // Wakes every waiter and makes further waits return false at once, until reset().
  void stop();
  // Re-arms the throttle after stop(), with an idle wire (no backlog from earlier reads).
  void reset();

 private:
  using Clock = std::chrono::steady_clock;

  StorageThrottle limits_;
  bool unlimited_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopped_ = false;
  Clock::time_point wire_free_at_;  // when the shared transfer wire is next idle
};

}  // namespace ffcv
