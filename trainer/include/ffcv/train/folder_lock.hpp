// A lock on a results folder (a run's, a grid point's, a grid's, an ablation's) held by the one
// process that writes into it, so that two processes never train or measure into the same
// folder at once (two copies of a grid started one after the other, a job array's task run
// twice, a grid restarted while the points of a killed one still train).
//
// The lock is flock(2) on FOLDER/.lock, which holds the pid of its holder. The kernel releases
// it when the holder exits in any way, SIGKILL included, so a dead process never leaves a stale
// lock: the next command simply takes it. The file itself stays (removing it would let two
// processes lock two different files of the same name).
//
// Within one process the lock is shared: a second FolderLock on a folder this process already
// holds succeeds (the command layer locks a point's folder before clearing it, and the trainer
// locks its run folder again when it starts). The lock's file descriptor is not inherited by
// child processes.
#pragma once

#include <string>

#include "ffcv/util/errors.hpp"

namespace ffcv::train {

// Another process holds the folder's lock. The message names the folder and the holder's pid.
class FolderBusyError : public Error {
 public:
  using Error::Error;
};

class FolderLock {
 public:
  FolderLock() = default;
  // Locks `folder` (creating it when missing). `what` names the folder in the error ("run
  // folder", "grid folder"). Throws FolderBusyError when another process holds it, IoError when
  // the lock file cannot be made.
  explicit FolderLock(const std::string& folder, const std::string& what = "folder");
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  bool held() const { return !key_.empty(); }

 private:
  void release();
  std::string key_;  // the lock file's absolute path; empty when nothing is held
};

// The pid of the process that holds `folder`'s lock (this process's own when it holds it), or 0
// when nobody does. A holder that has not yet written its pid reads as -1.
long folder_lock_holder(const std::string& folder);

// "run folder F is in use by process P (it holds F/.lock): wait for it to end, or stop it"
std::string folder_busy_message(const std::string& folder, const std::string& what, long pid);

}  // namespace ffcv::train
