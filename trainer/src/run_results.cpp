#include "ffcv/train/run_results.hpp"

#include <filesystem>
#include <sstream>
#include <vector>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/text_file.hpp"

namespace ffcv::train {
namespace {

namespace fs = std::filesystem;

double first_or(const std::vector<double>& values, double fallback) {
  return values.empty() ? fallback : values.front();
}

}  // namespace

const char* run_state_name(RunState state) {
  switch (state) {
    case RunState::kNone:
      return "none";
    case RunState::kStarted:
      return "started";
    case RunState::kStopped:
      return "stopped";
    case RunState::kFinished:
      return "finished";
    case RunState::kFailed:
      return "failed";
  }
  return "none";
}

RunResults read_run_results(const std::string& dir) {
  RunResults results;
  const fs::path folder(dir);
  std::error_code error;
  const std::string summary = read_text_if_present((folder / "summary.json").string());
  if (!summary.empty()) {
    results.epochs_done =
        static_cast<std::uint64_t>(first_or(json_numbers(summary, "epochs_done"), 0));
    results.val_top1 = first_or(json_numbers(summary, "val_top1"), 0);
    results.val_top5 = first_or(json_numbers(summary, "val_top5"), 0);
    results.val_loss = first_or(json_numbers(summary, "val_loss"), 0);
    results.train_loss = first_or(json_numbers(summary, "train_loss"), 0);
    results.train_seconds = first_or(json_numbers(summary, "train_seconds"), 0);
    results.images_per_second = first_or(json_numbers(summary, "images_per_second"), 0);
    results.parameter_checksum = first_or(json_numbers(summary, "parameter_checksum"), 0);
    const std::string log = read_text_if_present((folder / "log.jsonl").string());
    double epoch_total = 0, wait_total = 0;
    const std::vector<double> epochs = json_numbers(log, "epoch_seconds");
    for (const double seconds : epochs) epoch_total += seconds;
    results.epochs_logged = epochs.size();
    for (const double seconds : json_numbers(log, "loader_wait_seconds")) wait_total += seconds;
    results.loader_wait_share = epoch_total > 0 ? wait_total / epoch_total : 0;
  }
  if (summary.find("\"finished\": true") != std::string::npos) {
    results.state = RunState::kFinished;
  } else if (fs::exists(folder / "error.txt", error)) {
    results.state = RunState::kFailed;
    std::istringstream lines(read_text_if_present((folder / "error.txt").string()));
    std::getline(lines, results.error);
  } else if (fs::exists(folder / "checkpoint.pt", error)) {
    results.state = RunState::kStopped;
  } else if (fs::exists(folder / "recipe.toml", error)) {
    results.state = RunState::kStarted;
  }
  return results;
}

void write_run_error(const std::string& dir, const std::string& message) {
  std::error_code error;
  fs::create_directories(dir, error);
  write_text_file((fs::path(dir) / "error.txt").string(), redact_url_passwords(message) + "\n");
}

void clear_run_error(const std::string& dir) {
  std::error_code error;
  fs::remove(fs::path(dir) / "error.txt", error);
}

void clear_run_files(const std::string& dir) {
  std::error_code error;
  for (const char* name :
       {"recipe.toml", "log.jsonl", "checkpoint.pt", "summary.json", "error.txt"}) {
    fs::remove(fs::path(dir) / name, error);
  }
}

}  // namespace ffcv::train
