// `ffcv run RECIPE` with a grid (a [grid] section or --grid): the parts that need no LibTorch.
// The point itself (`--point I`) trains in run_command.cpp.
#pragma once

#include <string>
#include <vector>

#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/folder_provenance.hpp"
#include "ffcv/train/grid.hpp"
#include "ffcv/train/recipe.hpp"

namespace ffcv::tools {

struct GridInvocation {
  std::string recipe_path;
  std::vector<std::string> overrides;  // --set, applied to every point before its own values
  std::vector<std::string> grid_axes;  // --grid, passed on to the points
  std::string stop_after_steps;        // passed on to the points when not empty
  train::GridSpec spec;
  std::vector<train::GridPoint> points;
  std::string grid_dir;
  std::vector<std::string> gpus;  // CUDA device ids the points may use; empty: CPU training
  std::string command_line;       // for the table's header
  bool quiet = false;
};

// Checks what the whole grid depends on before any work: the recipe with the common overrides
// loads, it trains one process per point (dist.world_size = 1), and the placement fits the
// machine (no more processes than GPUs unless grid.share_gpus). Returns the points at once
// (threads and shared: grid.parallel, 0 meaning all).
// Throws ConfigError / UsageError.
int resolve_grid_parallel(const GridInvocation& grid, const train::Recipe& base);

// What a command does with the grid folder: trains the whole grid, trains one point (--point,
// a job array's task, or a point process of the grid), or tables the points (--gather).
enum class GridFolderUse { kWholeGrid, kOnePoint, kGather };

// What the grid's results depend on beyond its points: the recipe with the command line's --set
// (the swept keys left out) and the identity of every data file a point reads.
train::Provenance grid_provenance(const GridInvocation& grid);

// Readies the grid folder before any point trains, and returns the lock that a whole grid's run
// holds on it for its whole life (none for one point or --gather):
//  - `fresh` (whole grid only): a grid folder made earlier is moved aside to
//    GRID-before-DATE-TIME once no process uses it; a folder that holds no grid is refused;
//  - the folder must hold this grid's points (points.tsv) and have been made from the same
//    recipe and data (made_from.tsv, folder_provenance.hpp), else UsageError naming the first
//    difference and --fresh; the record is written when the folder has none;
//  - a whole grid: no other process may be running the grid or training any of its points
//    (folder_lock.hpp), else FolderBusyError naming the folder and the process.
train::FolderLock ready_grid_folder(const GridInvocation& grid, GridFolderUse use, bool fresh);

// Runs every point not finished yet in the grid's placement, then writes the table and plot.
// Returns 0 when every point finished, 1 when some failed, 130 when interrupted.
int run_grid_command(const GridInvocation& grid, const std::string& trainer_program);

// Writes the table and plot from the point folders as they are; returns 0.
int gather_grid_command(const GridInvocation& grid);

// Writes the table and plot and prints the best point (what run and gather end with).
void report_grid(const GridInvocation& grid);

// The folder of point `index` inside the grid folder.
std::string point_dir(const GridInvocation& grid, std::size_t index);

}  // namespace ffcv::tools
