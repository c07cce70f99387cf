// SIGINT and SIGTERM noted instead of obeyed, for a command that runs children and must stop
// them in order (ranks of `ffcv run --nproc`, the points of a grid, the cells of `ffcv ablate`).
//
// For its lifetime an InterruptWatch installs handlers that only remember the signal; the
// previous handlers come back when it is destroyed. The signal is kept in one process-wide slot.
// Watches nest (on one thread): a watch made while another lives shares the outer one's slot and
// handlers, so that a signal noted between two children (the outer watch's) is still seen by the
// next child's watch, which then stops that child at once.
#pragma once

namespace ffcv::tools {

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // The last signal noted (SIGINT or SIGTERM), or 0.
  int signal() const;
  // The same, forgetting it: the next call says 0 until another signal comes.
  int take();
};

}  // namespace ffcv::tools
