#include "grid/grid_together.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/arguments.hpp"
#include "common/stop_request.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_results.hpp"
#include "ffcv/train/train_together.hpp"
#include "ffcv/train/trainer.hpp"
#include "grid/grid_run.hpp"

namespace ffcv::tools {
namespace {

// What point `point` of the grid trains with: the command line's overrides, then the point's,
// then checkpoint.resume when it stopped with a checkpoint. Readies its folder: an earlier error
// is dropped on resume; a failed or unfinished start begins again from nothing.
std::vector<std::string> prepare_point(const GridInvocation& grid, const train::GridPoint& point,
                                       const train::RunResults& before) {
  const std::string dir = point_dir(grid, point);
  std::vector<std::string> overrides = point_overrides(grid, point);
  if (before.state == train::RunState::kStopped) {
    overrides.push_back("checkpoint.resume=" + dir + "/checkpoint.pt");
    train::clear_run_error(dir);
  } else {
    train::clear_run_files(dir);
  }
  return overrides;
}

// The options of the run of point `point` into its folder.
train::RunOptions point_options(const GridInvocation& grid, const train::GridPoint& point,
                                const std::string& stop_after) {
  train::RunOptions options;
  options.run_dir = point_dir(grid, point);
  options.quiet = grid.quiet;
  options.stop = &stop_requested();
  if (!stop_after.empty()) options.stop_after_steps = std::stoull(stop_after);
  return options;
}

}  // namespace

int run_grid_point(const GridInvocation& grid, const train::GridPoint& point,
                   const std::string& stop_after) {
  const std::string dir = point_dir(grid, point);
  // Before its files are read or cleared: no other process trains into the point's folder.
  const train::FolderLock point_lock(dir, "point folder");
  const train::RunResults before = train::read_run_results(dir);
  if (before.state == train::RunState::kFinished) {
    if (!grid.quiet) std::printf("point %zu already finished: %s\n", point.index, dir.c_str());
    return 0;
  }
  const std::vector<std::string> overrides = prepare_point(grid, point, before);
  try {
    const train::Recipe recipe = train::load_recipe(grid.recipe_path, overrides);
    train::check_labels_fit_model(recipe);
    stop_on_interrupt();
    const train::RunOptions options = point_options(grid, point, stop_after);
    if (!grid.quiet) {
      std::printf("point %zu: %s\n", point.index, redact_url_passwords(point.label).c_str());
    }
    const train::RunSummary summary = train::run_training(recipe, options);
    if (!grid.quiet && summary.finished) {
      std::printf("point %zu done: validation top-1 %.2f%%\n", point.index, 100 * summary.val_top1);
    }
    return summary.finished || !stop_requested().load() ? 0 : interrupted_status(stop_signal());
  } catch (const std::exception& error) {
    train::write_run_error(dir, error.what());
    throw;
  }
}

int run_grid_together(const GridInvocation& grid, const std::string& stop_after,
                      int models_per_group) {
  const std::vector<std::string> process_wide = {"training.cudnn_benchmark",
                                                 "training.deterministic"};
  for (const std::string& key : train::grid_keys(grid.spec)) {
    if (std::find(process_wide.begin(), process_wide.end(), key) != process_wide.end()) {
      throw UsageError("the grid sweeps " + key +
                       ", which is one setting for a whole process: "
                       "use placement sequential or processes");
    }
  }
  const int parallel = resolve_grid_parallel(grid, grid.base);
  std::vector<train::TogetherRun> runs;
  std::vector<train::FolderLock> point_locks;    // every point this process trains, held throughout
  std::vector<const train::GridPoint*> trained;  // the point of each of `runs`
  std::size_t finished = 0, failed = 0;
  for (const train::GridPoint& point : grid.points) {
    const std::string dir = point_dir(grid, point);
    point_locks.emplace_back(dir, "point folder");
    const train::RunResults before = train::read_run_results(dir);
    if (before.state == train::RunState::kFinished) {
      ++finished;
      continue;
    }
    const std::vector<std::string> overrides = prepare_point(grid, point, before);
    train::TogetherRun run;
    try {
      run.recipe = train::load_recipe(grid.recipe_path, overrides);
    } catch (const std::exception& error) {
      train::write_run_error(dir, error.what());
      ++failed;
      report_failed_point(point.index, error.what());
      continue;
    }
    run.options = point_options(grid, point, stop_after);
    run.options.label = "point " + std::to_string(point.index);
    runs.push_back(std::move(run));
    trained.push_back(&point);
  }
  if (!grid.quiet) {
    std::printf("grid: %zu points, %s in this process%s; %zu already finished; output: %s\n",
                grid.points.size(), grid.spec.placement.c_str(),
                parallel > 0 ? (", " + std::to_string(parallel) + " at once").c_str() : "",
                finished, grid.grid_dir.c_str());
    std::fflush(stdout);
  }
  stop_on_interrupt();
  train::TogetherOptions together;
  together.how =
      grid.spec.placement == "shared" ? train::Together::kShared : train::Together::kThreads;
  together.parallel = parallel;
  together.forward_lock = grid.spec.forward_lock;
  together.share_seeds = grid.spec.share_seeds;
  together.models_per_group = models_per_group;
  const std::vector<train::TogetherOutcome> outcomes = train::train_together(runs, together);
  for (std::size_t k = 0; k < outcomes.size(); ++k) {
    if (outcomes[k].ok || outcomes[k].not_started) continue;
    ++failed;
    train::write_run_error(point_dir(grid, *trained[k]), outcomes[k].error);
    report_failed_point(trained[k]->index, outcomes[k].error);
  }
  report_grid(grid);
  if (stop_requested().load()) {
    if (!grid.quiet) {
      std::printf("grid: interrupted; run the same command again to go on where it stopped\n");
    }
    return interrupted_status(stop_signal());
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace ffcv::tools
