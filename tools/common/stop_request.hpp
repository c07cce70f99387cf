// Ctrl-C and SIGTERM as a request to stop training in this process after the current batch,
// with a checkpoint (RunOptions::stop, and SAGA's): one run, a grid's point, or a grid's points
// on threads. A command that runs children notes the signals with InterruptWatch instead
// (interrupt_watch.hpp).
#pragma once

#include <atomic>

namespace ffcv::tools {

// The flag a run polls: set once SIGINT or SIGTERM arrives after stop_on_interrupt().
std::atomic<bool>& stop_requested();

// From now on, SIGINT and SIGTERM only set stop_requested().
void stop_on_interrupt();

}  // namespace ffcv::tools
