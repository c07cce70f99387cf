#include "ffcv/util/progress_bar.hpp"

#include <unistd.h>

#include <cstdio>

namespace ffcv {

ProgressBar::ProgressBar(std::string label, std::uint64_t total, std::string unit)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      interactive_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::format_duration(double seconds) {
  const long total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

std::string ProgressBar::format_rate(double per_second) {
  char text[32];
  if (per_second >= 1e6) {
    std::snprintf(text, sizeof text, "%.2fM", per_second / 1e6);
  } else if (per_second >= 1e4) {
    std::snprintf(text, sizeof text, "%.1fk", per_second / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f", per_second);
  }
  return text;
}

void ProgressBar::update(std::uint64_t done) {
  last_done_ = done;
  if (!interactive_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  draw(done, false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  draw(last_done_, true);
}

void ProgressBar::draw(std::uint64_t done, bool final_line) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double fraction = total_ ? static_cast<double>(done) / total_ : 1.0;
  constexpr int kWidth = 30;
  std::string bar(kWidth, ' ');
  for (int i = 0; i < static_cast<int>(fraction * kWidth) && i < kWidth; ++i) bar[i] = '=';
  std::string tail;
  if (final_line) {
    tail = "in " + format_duration(elapsed);
  } else {
    tail = "ETA " + (rate > 0 ? format_duration((total_ - done) / rate) : std::string("?"));
  }
  std::fprintf(stderr, "%s%s [%s] %llu/%llu %5.1f%% %s %s/s %s%s", interactive_ ? "\r" : "",
               label_.c_str(), bar.c_str(), static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total_), 100.0 * fraction, format_rate(rate).c_str(),
               unit_.c_str(), tail.c_str(), final_line ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace ffcv
