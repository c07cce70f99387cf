#include "ffcv/util/interrupt_cleanup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace ffcv {
namespace {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr int kTerminatingSignals[] = {SIGINT, SIGTERM, SIGHUP};

enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };

struct CleanupSlot {
  std::atomic<int> state{kFree};
  bool tree = false;
  char path[kMaxPathBytes] = {};
};

CleanupSlot g_slots[kMaxCleanupPaths];

// The linux_dirent64 record that getdents64 fills.
struct DirectoryRecord {
  std::uint64_t inode;
  std::int64_t offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

bool is_dot_or_dot_dot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

// Empties the open directory `dir` (depth-limited), then closes it.
void empty_directory(int dir, int depth) {
  alignas(8) char buffer[4096];
  for (int pass = 0; pass < 4; ++pass) {
    bool removed_any = false;
    ::lseek(dir, 0, SEEK_SET);
    for (;;) {
      const long bytes = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer);
      if (bytes <= 0) break;
      for (long at = 0; at < bytes;) {
        const auto* record = reinterpret_cast<const DirectoryRecord*>(buffer + at);
        at += record->length;
        if (is_dot_or_dot_dot(record->name)) continue;
        if (::unlinkat(dir, record->name, 0) == 0) {
          removed_any = true;
          continue;
        }
        if (depth <= 0 || (errno != EISDIR && errno != EPERM)) continue;
        const int child =
            ::openat(dir, record->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0) continue;
        empty_directory(child, depth - 1);
        if (::unlinkat(dir, record->name, AT_REMOVEDIR) == 0) removed_any = true;
      }
    }
    if (!removed_any) break;
  }
  ::close(dir);
}

void remove_registered_paths(int signal_number) {
  const int saved_errno = errno;
  for (CleanupSlot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) != kReady) continue;
    if (slot.tree) {
      remove_tree_signal_safe(slot.path);
    } else {
      ::unlink(slot.path);
    }
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(signal_number, &default_action, nullptr);
  errno = saved_errno;
  // Still blocked while this handler runs: delivered with the default action when it returns.
  ::raise(signal_number);
}

}  // namespace

void install_interrupt_cleanup() {
  for (const int signal_number : kTerminatingSignals) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0) continue;
    const bool is_default = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (!is_default) continue;
    struct sigaction action {};
    action.sa_handler = remove_registered_paths;
    sigemptyset(&action.sa_mask);
    for (const int other : kTerminatingSignals) sigaddset(&action.sa_mask, other);
    ::sigaction(signal_number, &action, nullptr);
  }
  // Past the file-size limit a write fails with EFBIG instead of the process dying of SIGXFSZ:
  // the writer reports it and removes its temporary.
  struct sigaction current {};
  if (::sigaction(SIGXFSZ, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
      current.sa_handler == SIG_DFL) {
    ::signal(SIGXFSZ, SIG_IGN);
  }
}

bool remove_tree_signal_safe(const char* path) {
  if (::unlink(path) == 0 || errno == ENOENT) return true;
  const int dir = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return false;
  empty_directory(dir, 8);
  return ::rmdir(path) == 0;
}

int register_cleanup_path(const std::string& path, bool tree) {
  static std::once_flag installed;
  std::call_once(installed, install_interrupt_cleanup);
  if (path.empty() || path.size() >= kMaxPathBytes) return -1;
  for (int i = 0; i < kMaxCleanupPaths; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].tree = tree;
    g_slots[i].state.store(kReady, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_cleanup_path(int slot) {
  if (slot < 0 || slot >= kMaxCleanupPaths) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
}

}  // namespace ffcv
