#include "mapping_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace ffcv::mapping_guard {
namespace {

enum SlotState : int { kFree = 0, kClaimed = 1, kReady = 2 };

struct GuardSlot {
  std::atomic<int> state{kFree};
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> faulted{false};
};

GuardSlot g_slots[kMaxGuardedMappings];
struct sigaction g_previous {};
std::uintptr_t g_page_size = 4096;

void on_sigbus(int signal_number, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) != kReady) continue;
    if (address < slot.begin.load() || address >= slot.end.load()) continue;
    void* page = reinterpret_cast<void*>(address & ~(g_page_size - 1));
    if (::mmap(page, g_page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      slot.faulted.store(true, std::memory_order_release);
      return;  // the access is retried and reads zeros
    }
  }
  // Not a fault of ours: the previous handler, or the default action on the retried access.
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal_number, info, context);
  } else if (!(g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_handler != SIG_DFL &&
             g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal_number);
  } else {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    ::sigaction(SIGBUS, &default_action, nullptr);
  }
}

void install_handler() {
  g_page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

}  // namespace

int add(const void* begin, std::size_t size) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  for (int i = 0; i < kMaxGuardedMappings; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kClaimed)) continue;
    g_slots[i].begin.store(reinterpret_cast<std::uintptr_t>(begin));
    g_slots[i].end.store(reinterpret_cast<std::uintptr_t>(begin) + size);
    g_slots[i].faulted.store(false);
    g_slots[i].state.store(kReady, std::memory_order_release);
    return i;
  }
  return -1;
}

void remove(int slot) {
  if (slot < 0 || slot >= kMaxGuardedMappings) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
}

bool faulted(int slot) {
  return slot >= 0 && slot < kMaxGuardedMappings &&
         g_slots[slot].faulted.load(std::memory_order_acquire);
}

}  // namespace ffcv::mapping_guard
