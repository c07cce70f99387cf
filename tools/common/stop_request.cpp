#include "common/stop_request.hpp"

#include <signal.h>

namespace ffcv::tools {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void request_stop(int signal) {
  g_signal.store(signal);
  g_stop.store(true);
}

}  // namespace

std::atomic<bool>& stop_requested() { return g_stop; }

int stop_signal() { return g_signal.load(); }

int interrupted_status(int signal) { return 128 + (signal > 0 ? signal : SIGINT); }

void stop_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace ffcv::tools
