// The table of a grid, gathered from its points' run folders alone (run_results.hpp), so that it
// can be rebuilt at any time: after a grid run, after an interrupted one, or after a cluster's
// job array ran the points on other machines (`ffcv run RECIPE --output-dir GRID --gather`).
//
// Written into the grid folder (each file replaced atomically):
//   grid.csv   one row per point: its index, its value of every swept key, its state
//              (finished | stopped | failed | started | none), the final validation top-1 and
//              top-5 and loss, the last epoch's train loss, epochs done, training seconds,
//              images/s (the whole run's, every session of a point stopped and resumed: its
//              summary.json), the loader's wait share, the intra-op threads it trained with,
//              and the error of a failed point
//   grid.json  the same rows, for scripts and the plot
//   grid.md    the same table for people, best finished point first, with the command and machine
//   grid.png   (tools/grid/plot_grid.py) validation top-1 per point, and against each axis
#pragma once

#include <string>
#include <vector>

#include "ffcv/train/grid.hpp"
#include "ffcv/train/run_results.hpp"

namespace ffcv::tools {

struct GridRow {
  train::GridPoint point;
  train::RunResults results;
  // The intra-op threads of its last start (log.jsonl), 0 when it never started. The placement
  // decides it (sequential: every core; the others: a share), and a point's weights depend on it.
  int threads = 0;
};

// The `threads` of the last start record in `dir`/log.jsonl; 0 when there is none.
int logged_threads(const std::string& dir);

// Reads every point's folder under `grid_dir`.
std::vector<GridRow> gather_grid(const std::string& grid_dir,
                                 const std::vector<train::GridPoint>& points);

// Writes grid.csv, grid.json and grid.md. Returns the paths written.
std::vector<std::string> write_grid_tables(const std::string& grid_dir,
                                           const std::vector<std::string>& keys,
                                           const std::vector<GridRow>& rows,
                                           const std::string& command_line);

}  // namespace ffcv::tools
