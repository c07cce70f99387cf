// Internal: the writer's read-ahead thread. It hints the source (SampleSource::prefetch) up to
// `distance` samples past the last one a worker has claimed, on a thread of its own, so that the
// hint's own cost never falls on the encoders: on cold storage opening a file waits for its inode
// to be read, and before this the workers waited for that in turn with their decodes.
//
// Protocol: the owner constructs it (the thread starts and hints the first `distance` samples),
// workers call claimed(index) as they take samples, and stop() or the destructor ends the thread
// (a prefetch in progress finishes first). A source whose prefetch does nothing costs one thread
// that sleeps.
//
// Errors: prefetch never throws (its contract); an exception from it ends the hints, not the
// write, as hints are optional.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "ffcv/dataset_writer.hpp"

namespace ffcv {

class ReadAhead {
 public:
  ReadAhead(const SampleSource& source, std::uint64_t distance);
  ~ReadAhead() { stop(); }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // A worker took sample `index`: hints may go up to index + distance.
  void claimed(std::uint64_t index);
  // Ends the thread; idempotent.
  void stop();

 private:
  void run();

  static constexpr std::uint64_t kWakeBatch = 16;  // hints per wake of a sleeping thread

  const SampleSource& source_;
  const std::uint64_t distance_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t limit_;   // hints go up to, not including, this sample
  bool waiting_ = false;  // the thread sleeps, having hinted up to waiting_at_
  std::uint64_t waiting_at_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ffcv
