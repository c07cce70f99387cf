// Finding processes by their command line (/proc/PID/cmdline), for tests that check which
// processes a command leaves behind.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace ffcv::test {

// The bytes of /proc/PID/cmdline, or "" once the process is gone: plain read(2), since a process
// that ends while it is read makes the read fail (ESRCH), which std::ifstream throws as an error.
inline std::string command_line_of(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string bytes;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) break;
    bytes.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return bytes;
}

// The live processes, other than this one, whose command line holds `text`. A zombie (ended,
// not yet reaped) has an empty command line and is not listed.
inline std::vector<pid_t> processes_naming(const std::string& text) {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid == ::getpid()) continue;
    std::string line = command_line_of(entry.path() / "cmdline");
    for (char& c : line) c = c == '\0' ? ' ' : c;
    if (line.find(text) != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

// Waits up to `patience` for `done()`; returns its last answer.
template <typename Done>
bool wait_until(Done done, std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace ffcv::test
