// Running the points of a grid (ffcv/train/grid.hpp), each one `ffcv run ... --point I` in a
// process of its own, so that a point that fails or crashes costs only itself.
//
// The grid folder holds
//   points.tsv     the points: index, folder, overrides. Written when the grid first runs; a
//                  folder that holds another grid is refused, so a table never mixes two grids
//   point-NNN/     each point's run folder (trainer.hpp), plus output.log: its process's stdout
//                  and stderr, and error.txt when it ended in an error (run_results.hpp)
//   grid.*         the table (grid_table.hpp)
//
// Placement:
//   sequential  one point at a time, with every core of this process's affinity
//   processes   `parallel` points at once; slot s gets its own contiguous share of this
//               process's cores (sched_setaffinity before exec: the point's threads and loader
//               workers size themselves from it) and, when training on CUDA, GPU s mod G
//               (CUDA_VISIBLE_DEVICES)
// Resuming: a finished point is not run again; a stopped point resumes from its checkpoint (the
// point process does that); a failed or crashed one starts again.
// A point that fails is reported on stderr as it ends, with its error's first line, even with
// --quiet (report_failed_point); the grid then exits 1.
// SIGINT / SIGTERM: running points get SIGTERM (each saves a checkpoint and stops), no new point
// starts, and the outcome says interrupted, and by which signal.
// points.tsv and the progress lines leave out the password of a URL among a point's values.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ffcv/train/grid.hpp"

namespace ffcv::tools {

struct GridRunOptions {
  std::string grid_dir;
  std::string program;                       // the trainer executable (ffcv-train)
  std::vector<std::string> point_arguments;  // one point's command line, without "--point I"
  int parallel = 1;                          // points at once (sequential: 1)
  bool pin = false;                          // processes: each slot on its own cores
  std::vector<int> cpus;                     // the cores to share (this process's affinity)
  std::vector<std::string> gpus;             // CUDA device ids to share; empty: CPU training
  bool quiet = false;
};

struct GridOutcome {
  std::size_t ran = 0, already_finished = 0, failed = 0;
  bool interrupted = false;
  int signal = 0;  // when interrupted: the signal (SIGINT or SIGTERM)
};

GridOutcome run_grid(const std::vector<train::GridPoint>& points, const GridRunOptions& options);

// Prints "grid: point I FAILED [after S s]: <the error's first line>" on stderr, whatever --quiet
// says: a failed point is never silent. Every placement reports its failed points through it.
// `seconds` < 0: the time is not known.
void report_failed_point(std::size_t index, const std::string& error, double seconds = -1);

// Writes points.tsv into `grid_dir` (creating it), or checks that the one there lists the same
// points. Throws UsageError for a folder of another grid, a non-empty folder without a grid, or
// a file.
void record_grid_points(const std::string& grid_dir, const std::vector<train::GridPoint>& points);

// The same for point `point` of the grid `spec` alone, without making the grid's other points
// (one point's process): the points.tsv in `grid_dir` must list `point` and end with the grid's
// last point (so many points), each as this grid writes it. A folder without points.tsv gets
// the whole grid's, as record_grid_points writes it. Throws UsageError as record_grid_points.
void record_grid_point(const std::string& grid_dir, const train::GridSpec& spec,
                       const train::GridPoint& point);

// Slot `slot` of `slots`' share of `cpus`: contiguous, sizes differing by at most one; with
// more slots than CPUs, slot s gets CPU s mod |cpus| alone.
std::vector<int> slot_cpus(const std::vector<int>& cpus, int slot, int slots);

}  // namespace ffcv::tools
