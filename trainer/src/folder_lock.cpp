#include "ffcv/train/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace ffcv::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockName = ".lock";

// The locks this process holds, by lock file: the descriptor and how many FolderLocks share it.
struct Held {
  int fd = -1;
  int count = 0;
};

std::mutex& held_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, Held>& held_locks() {
  static std::map<std::string, Held> locks;
  return locks;
}

std::string lock_path(const std::string& folder) {
  std::error_code error;
  const fs::path absolute = fs::absolute(fs::path(folder), error);
  return ((error ? fs::path(folder) : absolute).lexically_normal() / kLockName).string();
}

// The pid written in an open lock file, or -1 when it holds none yet.
long read_pid(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  if (got <= 0) return -1;
  char* end = nullptr;
  const long pid = std::strtol(text, &end, 10);
  return pid > 0 ? pid : -1;
}

// The pid in a lock file another process holds. The holder writes it just after taking the
// lock: give it a moment (up to 100 ms) to do so; -1 when it still has not.
long read_holder_pid(int fd) {
  long pid = read_pid(fd);
  for (int tries = 0; pid <= 0 && tries < 20; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pid = read_pid(fd);
  }
  return pid;
}

}  // namespace

std::string folder_busy_message(const std::string& folder, const std::string& what, long pid) {
  const std::string holder = pid > 0 ? "process " + std::to_string(pid) : "another process";
  return what + " " + folder + " is in use by " + holder + " (it holds " +
         (fs::path(folder) / kLockName).string() + "): wait for it to end, or stop it" +
         (pid > 0 ? " (kill " + std::to_string(pid) + ")" : "") + ", then run this again";
}

FolderLock::FolderLock(const std::string& folder, const std::string& what) {
  const std::string path = lock_path(folder);
  const std::lock_guard<std::mutex> hold(held_mutex());
  if (auto it = held_locks().find(path); it != held_locks().end()) {
    ++it->second.count;
    key_ = path;
    return;
  }
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw IoError(folder, "create the folder", error.value());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path, "open the lock file", errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int reason = errno;
    if (reason != EWOULDBLOCK) {
      ::close(fd);
      throw IoError(path, "lock", reason);
    }
    const long pid = read_holder_pid(fd);
    ::close(fd);
    throw FolderBusyError(folder_busy_message(folder, what, pid));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int reason = errno;
    ::close(fd);
    throw IoError(path, "write the lock file", reason);
  }
  held_locks()[path] = Held{fd, 1};
  key_ = path;
}

FolderLock::~FolderLock() { release(); }

FolderLock::FolderLock(FolderLock&& other) noexcept : key_(std::move(other.key_)) {
  other.key_.clear();
}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    release();
    key_ = std::move(other.key_);
    other.key_.clear();
  }
  return *this;
}

void FolderLock::release() {
  if (key_.empty()) return;
  const std::lock_guard<std::mutex> hold(held_mutex());
  auto it = held_locks().find(key_);
  if (it != held_locks().end() && --it->second.count == 0) {
    ::close(it->second.fd);  // releases the flock
    held_locks().erase(it);
  }
  key_.clear();
}

long folder_lock_holder(const std::string& folder) {
  const std::string path = lock_path(folder);
  {
    const std::lock_guard<std::mutex> hold(held_mutex());
    if (held_locks().count(path)) return static_cast<long>(::getpid());
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  long pid = 0;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) pid = read_holder_pid(fd);
  ::close(fd);  // also drops the shared lock taken to probe
  return pid;
}

}  // namespace ffcv::train
