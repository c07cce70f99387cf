// `ffcv run` of a recipe with a grid ([grid] or --grid), in ffcv-train: reads the grid's part of
// the command line, loads the recipe once, and runs what was asked:
//  - one point (--point I, or $SLURM_ARRAY_TASK_ID: a point process of the grid, or a cluster job
//    array's task): only that point is made (train::grid_point), its folder checked against its
//    own line of points.tsv and its own data (ready_point_folder), and it trains in this process
//    (grid_together.hpp);
//  - the table alone (--gather), from the point folders;
//  - the whole grid: what every point depends on is checked once (grid_preflight.hpp), its
//    memory estimated (grid_memory.hpp) and the folder readied (ready_grid_folder), then its
//    points run in their placement: processes of their own (grid_run.hpp) or threads of this
//    one (grid_together.hpp).
// `--print-recipe` prints every point's resolved recipe instead.
#pragma once

#include <string>
#include <vector>

#include "common/arguments.hpp"
#include "ffcv/train/grid.hpp"

namespace ffcv::tools {

// The most points --point (or a job array's task) may name.
inline constexpr long long kMaxGridPoints = 1'000'000;

// `args`: the parsed command line of `ffcv run` (run_command.cpp declares its options), `argv`
// the same as given (the tables' header shows it), `spec` the grid it names (not empty).
// Returns the exit status; throws UsageError / ConfigError / FolderBusyError before any work.
int run_grid_recipe(const Arguments& args, const std::vector<std::string>& argv,
                    const train::GridSpec& spec);

}  // namespace ffcv::tools
