#include "cli/interrupt_watch.hpp"

#include <signal.h>

#include <atomic>

namespace ffcv::tools {
namespace {

std::atomic<int> g_signal{0};
struct sigaction g_old_int {};
struct sigaction g_old_term {};

void remember(int signal) { g_signal.store(signal); }

}  // namespace

InterruptWatch::InterruptWatch() {
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = remember;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

InterruptWatch::~InterruptWatch() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int InterruptWatch::signal() const { return g_signal.load(); }

int InterruptWatch::take() { return g_signal.exchange(0); }

}  // namespace ffcv::tools
