#include "grid/grid_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

#include "common/arguments.hpp"
#include "common/child_process.hpp"
#include "common/stop_request.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "grid/grid_run.hpp"
#include "grid/grid_table.hpp"

namespace ffcv::tools {
namespace {

void say(const GridInvocation& grid, const std::string& line) {
  if (grid.quiet) return;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Throws FolderBusyError when a process other than this one holds the lock of `folder`.
void refuse_if_busy(const std::string& folder, const std::string& what) {
  const long holder = train::folder_lock_holder(folder);
  if (holder != 0 && holder != static_cast<long>(::getpid())) {
    throw train::FolderBusyError(train::folder_busy_message(folder, what, holder));
  }
}

// Throws FolderBusyError when the grid, or one of its points, is in use by another process.
void refuse_if_grid_busy(const GridInvocation& grid) {
  refuse_if_busy(grid.grid_dir, "grid folder");
  for (const train::GridPoint& point : grid.points) {
    refuse_if_busy(point_dir(grid, point), "point folder");
  }
}

// Throws UsageError when the folder's record differs from what this command would make.
void refuse_other_provenance(const GridInvocation& grid,
                             const std::vector<train::Recipe>& point_recipes) {
  const std::vector<train::ProvenanceDifference> differences =
      train::check_provenance(grid.grid_dir, grid_provenance(grid, point_recipes));
  if (!differences.empty()) {
    throw UsageError(grid.grid_dir + " holds results made from another recipe or data: " +
                     train::describe_differences(differences) +
                     "; run with --fresh to move them aside and start afresh, or give another "
                     "--output-dir");
  }
}

// Whether the grid folder holds a grid already (its points or its record).
bool holds_grid(const GridInvocation& grid) {
  std::error_code error;
  return std::filesystem::exists(std::filesystem::path(grid.grid_dir) / "points.tsv", error) ||
         train::has_provenance(grid.grid_dir);
}

// `record` (record_grid_points or record_grid_point), with --fresh named when the folder holds
// another grid.
void record_points(bool held_grid, const std::function<void()>& record) {
  try {
    record();
  } catch (const UsageError& refused) {
    if (!held_grid) throw;
    throw UsageError(std::string(refused.what()) +
                     "; or run with --fresh to move the earlier results aside and start afresh");
  }
}

}  // namespace

std::vector<std::string> point_overrides(const GridInvocation& grid,
                                         const train::GridPoint& point) {
  std::vector<std::string> overrides = grid.overrides;
  overrides.insert(overrides.end(), point.overrides.begin(), point.overrides.end());
  return overrides;
}

std::vector<train::Recipe> load_point_recipes(const GridInvocation& grid,
                                              const std::vector<train::GridPoint>& points) {
  std::vector<train::Recipe> recipes;
  for (const train::GridPoint& point : points) {
    try {
      recipes.push_back(train::load_recipe(grid.recipe_path, point_overrides(grid, point)));
    } catch (const ConfigError&) {
      // That point fails alone when its turn comes, with this error in its folder.
    }
  }
  return recipes;
}

train::Provenance grid_provenance(const GridInvocation& grid,
                                  const std::vector<train::Recipe>& point_recipes) {
  train::Provenance record;
  std::vector<std::string> skip = train::grid_keys(grid.spec);
  skip.insert(skip.end(), {"dist.world_size", "checkpoint.resume"});
  record.add_recipe(grid.base, skip);
  // The data files of the points (a grid may sweep data.train).
  std::set<std::string> files;
  for (const train::Recipe& recipe : point_recipes) {
    files.insert(recipe.data.train);
    files.insert(recipe.data.val);
  }
  for (const std::string& file : files) record.add_dataset(file);
  return record;
}

train::FolderLock ready_grid_folder(const GridInvocation& grid, GridFolderUse use, bool fresh,
                                    const std::vector<train::Recipe>& point_recipes) {
  namespace fs = std::filesystem;
  const bool whole = use == GridFolderUse::kWholeGrid;
  std::error_code error;
  const bool exists = fs::exists(grid.grid_dir, error);
  const bool held_grid = holds_grid(grid);
  if (fresh && exists) {
    if (!fs::is_directory(grid.grid_dir, error) || !held_grid) {
      throw UsageError("--fresh: " + grid.grid_dir +
                       " holds no grid (no points.tsv): it is left as it is; give a new or "
                       "empty --output-dir");
    }
    refuse_if_grid_busy(grid);
    const std::string aside = train::move_folder_aside(grid.grid_dir);
    say(grid, "grid: --fresh: the earlier results in " + grid.grid_dir + " were moved to " + aside);
  } else if (whole && held_grid) {
    refuse_if_busy(grid.grid_dir, "grid folder");
  }
  record_points(held_grid, [&] { record_grid_points(grid.grid_dir, grid.points); });
  train::FolderLock lock;
  if (whole) lock = train::FolderLock(grid.grid_dir, "grid folder");
  refuse_other_provenance(grid, point_recipes);
  if (whole) refuse_if_grid_busy(grid);
  return lock;
}

void ready_point_folder(const GridInvocation& grid, const train::GridPoint& point,
                        const std::vector<train::Recipe>& point_recipe) {
  const bool held_grid = holds_grid(grid);
  record_points(held_grid, [&] { record_grid_point(grid.grid_dir, grid.spec, point); });
  refuse_other_provenance(grid, point_recipe);
}

void report_grid(const GridInvocation& grid) {
  const std::vector<GridRow> rows = gather_grid(grid.grid_dir, grid.points);
  write_grid_tables(grid.grid_dir, train::grid_keys(grid.spec), rows, grid.command_line);
  std::size_t finished = 0;
  const GridRow* best = nullptr;
  for (const GridRow& row : rows) {
    if (row.results.state != train::RunState::kFinished) continue;
    ++finished;
    if (best == nullptr || row.results.val_top1 > best->results.val_top1) best = &row;
  }
  say(grid, "grid: " + std::to_string(finished) + " of " + std::to_string(rows.size()) +
                " points finished; table: " + grid.grid_dir + "/grid.md");
  if (best != nullptr) {
    char line[64];
    std::snprintf(line, sizeof line, "%.2f%%", 100 * best->results.val_top1);
    say(grid, "grid: best val top-1 " + std::string(line) + " at point " +
                  std::to_string(best->point.index) + ": " +
                  redact_url_passwords(best->point.label));
  }
  say(grid, run_plot_script(FFCV_PLOT_PYTHON, FFCV_GRID_PLOT_SCRIPT, grid.grid_dir + "/grid.json"));
}

std::string point_dir(const GridInvocation& grid, const train::GridPoint& point) {
  return (std::filesystem::path(grid.grid_dir) / point.folder).string();
}

int resolve_grid_parallel(const GridInvocation& grid, const train::Recipe& base) {
  if (base.dist.world_size != 1) {
    throw ConfigError(grid.recipe_path + ": a grid trains each point as one process; set " +
                      "dist.world_size = 1 (it is " + std::to_string(base.dist.world_size) + ")");
  }
  const int points = static_cast<int>(grid.points.size());
  if (grid.spec.placement == "sequential") return 1;
  if (grid.spec.placement == "threads" || grid.spec.placement == "shared") {
    return grid.spec.parallel;  // 0: every thread at once (train_together.hpp)
  }
  const int cores = static_cast<int>(affinity_cpus().size());
  int parallel = grid.spec.parallel;
  if (parallel == 0) {
    parallel = grid.gpus.empty() ? std::min(points, cores)
                                 : std::min(points, static_cast<int>(grid.gpus.size()));
  }
  parallel = std::max(1, std::min(parallel, points));
  if (!grid.gpus.empty() && parallel > static_cast<int>(grid.gpus.size()) &&
      !grid.spec.share_gpus) {
    throw ConfigError("grid.parallel = " + std::to_string(parallel) + " processes but " +
                      std::to_string(grid.gpus.size()) +
                      " CUDA device(s): set grid.share_gpus = true to let processes share a GPU, "
                      "or lower grid.parallel");
  }
  return parallel;
}

int run_grid_command(const GridInvocation& grid, const std::string& trainer_program) {
  GridRunOptions options;
  options.grid_dir = grid.grid_dir;
  options.program = trainer_program;
  options.parallel = resolve_grid_parallel(grid, grid.base);
  options.pin = grid.spec.placement == "processes";
  options.cpus = affinity_cpus();
  options.gpus = grid.gpus;
  options.quiet = grid.quiet;
  options.point_arguments = {grid.recipe_path};
  for (const std::string& o : grid.overrides)
    options.point_arguments.insert(options.point_arguments.end(), {"--set", o});
  for (const std::string& a : grid.grid_axes)
    options.point_arguments.insert(options.point_arguments.end(), {"--grid", a});
  if (!grid.stop_after_steps.empty()) {
    options.point_arguments.insert(options.point_arguments.end(),
                                   {"--stop-after-steps", grid.stop_after_steps});
  }
  options.point_arguments.insert(options.point_arguments.end(), {"--output-dir", grid.grid_dir});
  say(grid, "grid: " + std::to_string(grid.points.size()) + " points, " + grid.spec.placement +
                (options.parallel > 1 ? ", " + std::to_string(options.parallel) + " at once" : "") +
                "; output: " + grid.grid_dir);
  const GridOutcome outcome = run_grid(grid.points, options);
  report_grid(grid);
  if (outcome.interrupted) {
    say(grid, "grid: interrupted; run the same command again to go on where it stopped");
    return interrupted_status(outcome.signal);
  }
  return outcome.failed > 0 ? 1 : 0;
}

int gather_grid_command(const GridInvocation& grid) {
  record_grid_points(grid.grid_dir, grid.points);
  report_grid(grid);
  return 0;
}

}  // namespace ffcv::tools
