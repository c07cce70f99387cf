// A one-line terminal progress bar with rate and ETA, for long jobs (writing, benchmarking).
//
// It draws on stderr only when stderr is a terminal, at most 10 times a second; elsewhere (logs,
// CI) it prints nothing until finish(), which prints one summary line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ffcv {

class ProgressBar {
 public:
  // `unit` names what is counted ("samples", "images").
  ProgressBar(std::string label, std::uint64_t total, std::string unit);
  void update(std::uint64_t done);
  void finish();

  // "1:02:03" / "2:03" formatting of a duration, and "12.3k" formatting of a rate.
  static std::string format_duration(double seconds);
  static std::string format_rate(double per_second);

 private:
  void draw(std::uint64_t done, bool final_line);
  std::string label_;
  std::uint64_t total_;
  std::string unit_;
  bool interactive_;
  bool finished_ = false;
  std::uint64_t last_done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace ffcv
