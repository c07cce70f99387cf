// Finding processes by their command line (/proc/PID/cmdline), for tests that check which
// processes a command leaves behind.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace ffcv::test {

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
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
