// Ctrl-C and SIGTERM as a request to stop training in this process after the current batch,
// with a checkpoint (RunOptions::stop, and SAGA's): one run, a grid's point, or a grid's points
// on threads. A command that runs children notes the signals with InterruptWatch instead
// (interrupt_watch.hpp).
//
// A command stopped by a signal exits as a shell reports a process that signal ended: 128 + N,
// so 130 after Ctrl-C (SIGINT) and 143 after SIGTERM (interrupted_status).
#pragma once

#include <atomic>

namespace ffcv::tools {

// The flag a run polls: set once SIGINT or SIGTERM arrives after stop_on_interrupt().
std::atomic<bool>& stop_requested();

// The signal that set stop_requested() (SIGINT or SIGTERM), or 0.
int stop_signal();

// The exit status of a command that `signal` stopped: 128 + signal (130 for SIGINT, 143 for
// SIGTERM); 130 when the signal is not known (0).
int interrupted_status(int signal);

// From now on, SIGINT and SIGTERM only set stop_requested().
void stop_on_interrupt();

}  // namespace ffcv::tools
