#include "common/stop_request.hpp"

#include <signal.h>

namespace ffcv::tools {
namespace {

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop.store(true); }

}  // namespace

std::atomic<bool>& stop_requested() { return g_stop; }

void stop_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace ffcv::tools
