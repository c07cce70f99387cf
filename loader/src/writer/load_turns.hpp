// Internal: the writer's loads, one at a time in row order, for a source that needs it
// (SampleSource::loads_one_at_a_time: a Python dataset whose __getitem__ uses global state).
//
// Protocol: workers claim rows in order and each calls in_turn(row, load) at once, so the row
// before a waiting one is held by a worker about to load it or loading it: every wait ends. A
// load that throws passes the turn on too. For other sources in_turn just calls load.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace ffcv {

class LoadTurns {
 public:
  explicit LoadTurns(bool one_at_a_time) : one_at_a_time_(one_at_a_time) {}

  // Runs `load` for row `row`, once every row before it was loaded, and returns what it returns.
  template <typename Load>
  auto in_turn(std::uint64_t row, Load&& load) {
    if (!one_at_a_time_) return load();
    {
      std::unique_lock lock(mutex_);
      turn_changed_.wait(lock, [&] { return next_row_ == row; });
    }
    const PassOn pass_on{*this};
    return load();
  }

 private:
  struct PassOn {
    LoadTurns& turns;
    ~PassOn() {
      {
        std::lock_guard lock(turns.mutex_);
        ++turns.next_row_;
      }
      turns.turn_changed_.notify_all();
    }
  };

  const bool one_at_a_time_;
  std::mutex mutex_;
  std::condition_variable turn_changed_;
  std::uint64_t next_row_ = 0;
};

}  // namespace ffcv
