// `ffcv run RECIPE` with a grid (a [grid] section or --grid): the parts that need no LibTorch.
// The command line is read, and points train in this process (`--point I`, threads, shared), in
// ffcv-train: grid_recipe_run.hpp and grid_together.hpp.
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
  // The recipe with `overrides`, loaded once per command: what every point starts from.
  train::Recipe base;
  // Every point, for a command on the whole grid or its table; one point's process (--point I)
  // makes only its own (train::grid_point) and leaves this empty.
  std::vector<train::GridPoint> points;
  std::string grid_dir;
  std::vector<std::string> gpus;  // CUDA device ids the points may use; empty: CPU training
  std::string command_line;       // for the table's header
  bool quiet = false;
};

// Checks what the whole grid depends on before any work: `base` (the recipe with the common
// overrides) trains one process per point (dist.world_size = 1), and the placement fits the
// machine (no more processes than GPUs unless grid.share_gpus). Returns the points at once
// (threads and shared: grid.parallel, 0 meaning all).
// Throws ConfigError / UsageError.
int resolve_grid_parallel(const GridInvocation& grid, const train::Recipe& base);

// The overrides of point `point`: the command line's --set, then the point's own values.
std::vector<std::string> point_overrides(const GridInvocation& grid, const train::GridPoint& point);

// The recipes of `points` that load. A point whose recipe does not load is left out: it fails
// alone when its turn comes, with the error in its folder.
std::vector<train::Recipe> load_point_recipes(const GridInvocation& grid,
                                              const std::vector<train::GridPoint>& points);

// What a command does with the grid folder: trains the whole grid, or tables the points
// (--gather). One point alone readies it with ready_point_folder.
enum class GridFolderUse { kWholeGrid, kGather };

// What the grid's results depend on beyond its points: grid.base (the recipe with the command
// line's --set, the swept keys left out) and the identity of every data file `point_recipes`
// read (load_point_recipes: every point's, or one point's own).
train::Provenance grid_provenance(const GridInvocation& grid,
                                  const std::vector<train::Recipe>& point_recipes);

// Readies the grid folder before any point trains, and returns the lock that a whole grid's run
// holds on it for its whole life (none for --gather):
//  - `fresh` (whole grid only): a grid folder made earlier is moved aside to
//    GRID-before-DATE-TIME once no process uses it; a folder that holds no grid is refused;
//  - the folder must hold this grid's points (points.tsv) and have been made from the same
//    recipe and data (made_from.tsv, folder_provenance.hpp; `point_recipes` are every point's
//    that loads), else UsageError naming the first difference and --fresh; the record is
//    written when the folder has none;
//  - a whole grid: no other process may be running the grid or training any of its points
//    (folder_lock.hpp), else FolderBusyError naming the folder and the process.
train::FolderLock ready_grid_folder(const GridInvocation& grid, GridFolderUse use, bool fresh,
                                    const std::vector<train::Recipe>& point_recipes);

// Readies the grid folder for point `point` alone (--point I, a job array's task, or a point
// process of the grid), without making the grid's other points: points.tsv must list as many
// points as grid.spec has and `point` as this grid has it (a folder without points.tsv gets the
// whole grid's), and the folder's record must agree with the recipe and with this point's own
// data files (`point_recipe`: load_point_recipes of this point; the other points' data files
// are theirs to check). Throws UsageError as ready_grid_folder does.
void ready_point_folder(const GridInvocation& grid, const train::GridPoint& point,
                        const std::vector<train::Recipe>& point_recipe);

// Runs every point not finished yet in the grid's placement, then writes the table and plot.
// Returns 0 when every point finished, 1 when some failed, 130 when interrupted.
int run_grid_command(const GridInvocation& grid, const std::string& trainer_program);

// Writes the table and plot from the point folders as they are; returns 0.
int gather_grid_command(const GridInvocation& grid);

// Writes the table and plot and prints the best point (what run and gather end with).
void report_grid(const GridInvocation& grid);

// The folder of point `point` inside the grid folder.
std::string point_dir(const GridInvocation& grid, const train::GridPoint& point);

}  // namespace ffcv::tools
