#include "common/interrupt_watch.hpp"

#include <signal.h>

#include <atomic>

namespace ffcv::tools {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_depth{0};  // watches alive; only the outermost installs and restores
struct sigaction g_old_int {};
struct sigaction g_old_term {};

void remember(int signal) { g_signal.store(signal); }

}  // namespace

InterruptWatch::InterruptWatch() {
  if (g_depth.fetch_add(1) != 0) return;  // nested: the outer watch's signal stands
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = remember;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

InterruptWatch::~InterruptWatch() {
  if (g_depth.fetch_sub(1) != 1) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int InterruptWatch::signal() const { return g_signal.load(); }

int InterruptWatch::take() { return g_signal.exchange(0); }

}  // namespace ffcv::tools
