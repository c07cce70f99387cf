// Files and folders that must not outlive an interrupted process: removed when SIGINT, SIGTERM
// or SIGHUP ends it.
//
// A program that builds an output under a temporary name (AtomicFile, a generated image tree)
// registers the temporary here and unregisters it once renamed into place. The first
// registration installs one handler for each of the three signals whose disposition is still
// SIG_DFL; a signal that the program handles itself (or ignores, as under nohup) is left alone.
// The handler removes every registered path, restores the default action and raises the signal
// again, so that the process ends as the signal says (a shell reports 128 + the signal number).
// SIGXFSZ, when still SIG_DFL, is ignored from then on: a write past the file-size limit (ulimit
// -f, RLIMIT_FSIZE) then fails with EFBIG, which the writer reports as one IoError before
// removing its temporary, instead of the process dumping core and leaving the temporary behind.
//
// Async-signal safety: the registry is a fixed table of slots with atomic states, read by the
// handler without locks or allocation; a tree is removed with open/getdents64/unlinkat only.
// Registration is thread-safe. A process holds at most kMaxCleanupPaths registrations at once;
// past that, register_cleanup_path() returns -1 and the path is left to the stale-temporary rule
// (a later AtomicFile removes temporaries whose writer is gone).
#pragma once

#include <string>

namespace ffcv {

inline constexpr int kMaxCleanupPaths = 64;

// Installs the handler for each of SIGINT, SIGTERM and SIGHUP whose disposition is SIG_DFL, and
// ignores SIGXFSZ when its disposition is SIG_DFL.
// register_cleanup_path() calls it once, on first use; a process whose dispositions changed
// since (a forked child that reset them) may call it again.
void install_interrupt_cleanup();

// Registers `path` for removal on a terminating signal; `tree` removes a folder with its
// contents. Returns the slot to pass to unregister_cleanup_path(), or -1 when the table is full
// or the path is too long.
int register_cleanup_path(const std::string& path, bool tree = false);

// Forgets a registration (a negative slot is ignored). Call it once the path is renamed or
// removed by the program itself.
void unregister_cleanup_path(int slot);

// Removes `path` and everything under it using only async-signal-safe calls; returns true when
// nothing is left. Used by the handler, and by programs linked with LibTorch, whose shared
// library exports a copy of std::filesystem::remove_all that crashes when interposed.
bool remove_tree_signal_safe(const char* path);

}  // namespace ffcv
