// Elapsed wall time, measured on the monotonic clock: the one timer behind every figure the
// project reports in seconds (epoch and step times, waits, throughput). Deadlines (timeouts,
// throttling) keep their own time points; a Stopwatch only answers "how long since".
#pragma once

#include <chrono>

namespace ffcv {

class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts at construction.
  Stopwatch() : start_(Clock::now()) {}

  // Seconds since the start (or the last restart).
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // Returns the seconds so far and starts again from now.
  double restart() {
    const Clock::time_point now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return elapsed;
  }

 private:
  Clock::time_point start_;
};

}  // namespace ffcv
