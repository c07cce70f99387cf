// A grid's points trained inside this process, in ffcv-train (LibTorch): one point alone
// (`--point I`: a point process of the sequential and processes placements, or a cluster job
// array's task), or every point at once on threads (placements threads and shared,
// train_together.hpp).
//
// Each point trains into its own folder (point_dir), locked while it trains: a finished point is
// skipped, a stopped one resumes from its checkpoint, a failed or unfinished start begins again
// from nothing. A point's error is recorded in its folder (error.txt) for the grid's table.
// SIGINT and SIGTERM stop the points after their current batch, with checkpoints
// (stop_request.hpp).
#pragma once

#include <string>

#include "ffcv/train/grid.hpp"
#include "grid/grid_command.hpp"

namespace ffcv::tools {

// Trains point `point` of the grid (its folder readied by ready_point_folder), stopping after
// `stop_after` training steps when not empty. Returns 0, or 130 when SIGINT or SIGTERM stopped
// it; a point whose recipe does not load or whose training fails throws, its error recorded
// first.
int run_grid_point(const GridInvocation& grid, const train::GridPoint& point,
                   const std::string& stop_after);

// Trains every point of grid.points not finished yet in this process (placements threads and
// shared; the folder readied by ready_grid_folder), `models_per_group` models built together in
// a shared group (0: no limit; grid_memory.hpp), then writes the table. A point whose recipe
// does not load fails alone. Returns 0 when every point finished, 1 when some failed, 130 when
// interrupted. Throws UsageError for a grid that sweeps a key that is one setting per process.
int run_grid_together(const GridInvocation& grid, const std::string& stop_after,
                      int models_per_group);

}  // namespace ffcv::tools
