#include "grid/grid_run.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <string_view>
#include <thread>

#include "common/arguments.hpp"
#include "common/child_process.hpp"
#include "common/interrupt_watch.hpp"
#include "common/spawn.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/run_results.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "ffcv/util/text_file.hpp"

namespace ffcv::tools {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPointsHeader = "# index\tfolder\toverrides (tab-separated)\n";

// One point's line of points.tsv; the password of a URL among its values is left out
// (url_credentials.hpp), so that a grid over data URLs keeps them out of its folder.
std::string point_line(const train::GridPoint& point) {
  std::string line = std::to_string(point.index) + "\t" + point.folder;
  for (const std::string& o : point.overrides) line += "\t" + redact_url_passwords(o);
  return line + "\n";
}

std::string points_text(const std::vector<train::GridPoint>& points) {
  std::string text(kPointsHeader);
  for (const train::GridPoint& point : points) text += point_line(point);
  return text;
}

// Whether points.tsv's `text` lists `point` and ends with `last`, the grid's last point, each
// written as points_text writes it: the same grid, as far as one point and the count tell.
bool lists_point(const std::string& text, const train::GridPoint& point,
                 const train::GridPoint& last) {
  const std::string line = point_line(point), last_line = point_line(last);
  return text.rfind(kPointsHeader, 0) == 0 && text.find("\n" + line) != std::string::npos &&
         text.size() >= kPointsHeader.size() + last_line.size() &&
         text.compare(text.size() - last_line.size(), last_line.size(), last_line) == 0;
}

[[noreturn]] void refuse_other_grid(const std::string& grid_dir) {
  throw UsageError(grid_dir +
                   " holds the runs of another grid (its points.tsv lists other points); "
                   "give a new --output-dir, or the same grid settings as before");
}

void say(const GridRunOptions& options, const std::string& line) {
  if (options.quiet) return;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

struct Running {
  pid_t pid = -1;
  std::size_t point = 0;
  int slot = 0;
  Stopwatch start;
};

}  // namespace

void record_grid_points(const std::string& grid_dir, const std::vector<train::GridPoint>& points) {
  const fs::path path = fs::path(grid_dir) / "points.tsv";
  const std::string text = points_text(points);
  std::error_code error;
  if (fs::exists(path, error)) {
    if (read_text_if_present(path.string()) != text) refuse_other_grid(grid_dir);
    return;
  }
  if (fs::exists(grid_dir, error)) {
    if (!fs::is_directory(grid_dir, error)) {
      throw UsageError(grid_dir + " is a file; a grid's --output-dir is a folder");
    }
    // Another task of the same job array may be writing points.tsv right now: its point
    // folders and the temporary are a grid's, anything else is not.
    for (const fs::directory_entry& entry : fs::directory_iterator(grid_dir, error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("point-", 0) != 0 && name.rfind(".points.tsv", 0) != 0 &&
          name != "points.tsv") {
        throw UsageError(grid_dir +
                         " holds other files and no grid (no points.tsv); give a new or empty "
                         "folder, or the folder of this grid");
      }
    }
  }
  fs::create_directories(grid_dir, error);
  if (error) throw IoError(grid_dir, "create the grid folder", error.value());
  write_file_atomically(path.string(), std::string_view(text));
}

void record_grid_point(const std::string& grid_dir, const train::GridSpec& spec,
                       const train::GridPoint& point) {
  const fs::path path = fs::path(grid_dir) / "points.tsv";
  std::error_code error;
  if (!fs::exists(path, error)) {
    record_grid_points(grid_dir, train::grid_points(spec));
    return;
  }
  const train::GridPoint last = train::grid_point(spec, train::grid_point_count(spec) - 1);
  if (!lists_point(read_text_if_present(path.string()), point, last)) refuse_other_grid(grid_dir);
}

std::vector<int> slot_cpus(const std::vector<int>& cpus, int slot, int slots) {
  const int n = static_cast<int>(cpus.size());
  if (slots <= 0 || n == 0) return cpus;
  if (slots > n) return {cpus[static_cast<std::size_t>(slot % n)]};
  const int begin = slot * n / slots, end = (slot + 1) * n / slots;
  return std::vector<int>(cpus.begin() + begin, cpus.begin() + end);
}

namespace {

// The points of `points` not finished yet, in order; counts the others in `outcome`.
std::deque<std::size_t> unfinished_points(const std::vector<train::GridPoint>& points,
                                          const GridRunOptions& options, GridOutcome& outcome) {
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string dir = (fs::path(options.grid_dir) / points[i].folder).string();
    if (train::read_run_results(dir).state == train::RunState::kFinished) {
      ++outcome.already_finished;
    } else {
      queue.push_back(i);
    }
  }
  if (outcome.already_finished > 0) {
    say(options, "grid: " + std::to_string(outcome.already_finished) + " of " +
                     std::to_string(points.size()) + " points already finished");
  }
  return queue;
}

// Starts point `index` of `points` as a process of its own in `slot` of `slots` (its cores and
// GPU), its output into its folder, and says so: the `number`th start of `to_run`.
Running start_point(const std::vector<train::GridPoint>& points, std::size_t index, int slot,
                    int slots, const GridRunOptions& options, std::size_t number,
                    std::size_t to_run) {
  const train::GridPoint& point = points[index];
  const fs::path dir = fs::path(options.grid_dir) / point.folder;
  std::error_code error;
  fs::create_directories(dir, error);
  SpawnOptions spawn;
  spawn.output_file = (dir / "output.log").string();
  if (options.pin) spawn.cpus = slot_cpus(options.cpus, slot, slots);
  if (!options.gpus.empty()) {
    spawn.environment.push_back("CUDA_VISIBLE_DEVICES=" +
                                options.gpus[static_cast<std::size_t>(slot) % options.gpus.size()]);
  }
  std::vector<std::string> arguments = options.point_arguments;
  arguments.insert(arguments.end(), {"--point", std::to_string(point.index)});
  Running r;
  r.point = index;
  r.slot = slot;
  r.start = Stopwatch();
  r.pid = spawn_process(options.program, arguments, spawn);
  std::string where;
  if (options.pin) where += " on cores " + cpu_list_text(spawn.cpus);
  if (!options.gpus.empty()) where += " on " + spawn.environment.back();
  say(options, "grid: point " + std::to_string(point.index) + " (" + std::to_string(number) + "/" +
                   std::to_string(to_run) + ") started" + where + ": " +
                   redact_url_passwords(point.label));
  return r;
}

// Reports how the process `done` of `point` ended (wait status `status`), counting it in
// `outcome`. A point that died before it could say why gets its output's last line and the
// status as its error.
void report_point_end(const train::GridPoint& point, const Running& done, int status,
                      const GridRunOptions& options, GridOutcome& outcome) {
  ++outcome.ran;
  const fs::path dir = fs::path(options.grid_dir) / point.folder;
  const double seconds = done.start.seconds();
  train::RunResults results = train::read_run_results(dir.string());
  const int code = exit_status(status);
  char line[160];
  if (results.state == train::RunState::kFinished) {
    std::snprintf(line, sizeof line, "finished in %.1f s: val top-1 %.2f%%", seconds,
                  100 * results.val_top1);
  } else if (results.state == train::RunState::kStopped) {
    std::snprintf(line, sizeof line, "stopped after %.1f s with a checkpoint", seconds);
  } else {
    ++outcome.failed;
    if (results.state != train::RunState::kFailed) {
      // Killed or crashed before it could say why: its output's last line, and the status.
      const std::string last = last_line(read_text_if_present((dir / "output.log").string()));
      train::write_run_error(dir.string(), "exited with status " + std::to_string(code) +
                                               (last.empty() ? "" : ": " + last));
      results = train::read_run_results(dir.string());
    }
    report_failed_point(point.index, results.error, seconds);
    return;
  }
  say(options, "grid: point " + std::to_string(point.index) + " " + line);
}

}  // namespace

GridOutcome run_grid(const std::vector<train::GridPoint>& points, const GridRunOptions& options) {
  record_grid_points(options.grid_dir, points);
  GridOutcome outcome;
  std::deque<std::size_t> queue = unfinished_points(points, options, outcome);

  const InterruptWatch watch;

  const int slots = std::max(1, options.parallel);
  std::vector<Running> running;
  std::vector<bool> slot_busy(static_cast<std::size_t>(slots), false);
  bool stopping = false;
  std::size_t started = 0;
  const std::size_t to_run = queue.size();
  while (!queue.empty() || !running.empty()) {
    if (!stopping && watch.signal() != 0) {
      stopping = true;
      outcome.interrupted = true;
      outcome.signal = watch.signal();
      say(options, "grid: interrupted; the running points save a checkpoint and stop");
      for (const Running& r : running) ::kill(r.pid, SIGTERM);
    }
    // Fill free slots.
    while (!stopping && !queue.empty() && static_cast<int>(running.size()) < slots) {
      int slot = 0;
      while (slot_busy[static_cast<std::size_t>(slot)]) ++slot;
      running.push_back(
          start_point(points, queue.front(), slot, slots, options, started + 1, to_run));
      queue.pop_front();
      slot_busy[static_cast<std::size_t>(slot)] = true;
      ++started;
    }
    if (stopping && running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (std::size_t k = 0; k < running.size(); ++k) {
      if (running[k].pid != pid) continue;
      const Running done = running[k];
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      slot_busy[static_cast<std::size_t>(done.slot)] = false;
      report_point_end(points[done.point], done, status, options, outcome);
      break;
    }
  }
  return outcome;
}

void report_failed_point(std::size_t index, const std::string& error, double seconds) {
  char after[64] = "";
  if (seconds >= 0) std::snprintf(after, sizeof after, " after %.1f s", seconds);
  const std::string first_line = redact_url_passwords(error.substr(0, error.find('\n')));
  std::fprintf(stderr, "grid: point %zu FAILED%s: %s\n", index, after,
               first_line.empty() ? "no error recorded" : first_line.c_str());
  std::fflush(stderr);
}

}  // namespace ffcv::tools
