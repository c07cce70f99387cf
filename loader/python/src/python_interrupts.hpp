// Ctrl-C while native code waits. Python runs its signal handlers on the main thread, between
// bytecodes, so a call that waits without the GIL would see a Ctrl-C only once its wait ended
// (for a silent server, a minute). The waits of the package therefore go in slices of about
// 100 ms and, between slices, take the GIL and run the handlers (PyErr_CheckSignals); a handler
// that raises (KeyboardInterrupt) ends the wait with its error. On other threads than the main
// one PyErr_CheckSignals does nothing, so the waits there are as before.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

namespace ffcv::python {

namespace nb = nanobind;

// How long a wait goes without looking for signals.
inline constexpr std::chrono::milliseconds kSignalPoll{100};

// With the GIL: calls `done` without the GIL until it returns true, running the signal handlers
// between calls; `done` must return within about kSignalPoll. Throws nb::python_error when a
// handler raised.
inline void wait_interruptibly(const std::function<bool()>& done) {
  for (;;) {
    {
      nb::gil_scoped_release unlocked;
      if (done()) return;
    }
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  }
}

// HttpOptions::cancelled for a call that waits on a server without the GIL (opening a URL).
// While the watch lives, the hook, on the thread that made the watch, takes the GIL and runs the
// signal handlers; one that raised cancels the wait (the core throws CancelledError) and leaves
// its error pending for raise_if_interrupted(). On other threads (the loader's readers), and
// after the watch ended, the hook says false at once.
class InterruptWatch {
 public:
  InterruptWatch() : state_(std::make_shared<State>()) {}
  ~InterruptWatch() { state_->watching.store(false); }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  std::function<bool()> hook() const {
    return [state = state_] {
      if (!state->watching.load() || std::this_thread::get_id() != state->thread) return false;
      nb::gil_scoped_acquire locked;
      if (PyErr_CheckSignals() == 0) return false;
      state->raised = true;
      return true;
    };
  }

  // With the GIL, after the watched call threw: raises the handler's error when one stopped it.
  void raise_if_interrupted() const {
    if (state_->raised) throw nb::python_error();
  }

 private:
  struct State {
    std::thread::id thread = std::this_thread::get_id();
    std::atomic<bool> watching{true};
    bool raised = false;  // only touched on `thread`
  };
  std::shared_ptr<State> state_;
};

}  // namespace ffcv::python
