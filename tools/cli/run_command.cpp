// `ffcv run RECIPE.toml [--set section.key=value ...] [--nproc N]`: trains what the recipe
// describes (trainer/), as one process or as N ranks on this machine.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/child_process.hpp"
#include "cli/loader_run.hpp"
#include "cli/rank_launcher.hpp"
#include "cli/run_command.hpp"
#include "ffcv/available_memory.hpp"
#include "ffcv/byte_size.hpp"
#include "ffcv/errors.hpp"
#include "ffcv/interrupt_cleanup.hpp"
#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_run.hpp"
#include "ffcv/saga/saga_step.hpp"
#include "ffcv/stopwatch.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/text_file.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/grid.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_results.hpp"
#include "ffcv/train/train_together.hpp"
#include "ffcv/train/trainer.hpp"
#include "grid/grid_command.hpp"
#include "grid/grid_memory.hpp"
#include "grid/grid_preflight.hpp"
#include "grid/grid_run.hpp"

namespace ffcv::tools {
namespace {

// Ranks one launcher starts, and the furthest --stop-after-steps.
constexpr long long kMaxRanks = 1024;
constexpr long long kMaxSteps = 1'000'000'000'000;
constexpr long long kMaxPoints = 1'000'000;

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop.store(true); }

Arguments run_arguments() {
  Arguments args("run",
                 "Train the model a TOML recipe describes (docs/recipes.md): ResNet fed by the\n"
                 "loader, evaluated with test-time augmentation. Writes recipe.toml, log.jsonl,\n"
                 "checkpoint.pt and summary.json into the run's folder. Ctrl-C stops after the\n"
                 "current batch with a checkpoint; resume with --set checkpoint.resume=PATH.\n"
                 "\n"
                 "With a [grid] section or --grid, trains one run per point of the grid into\n"
                 "GRID/point-NNN and tables them in GRID/grid.{csv,json,md,png}. Placements:\n"
                 "  sequential  one point after another, each a process with every core\n"
                 "  processes   points at once, each a process pinned to its own cores (and GPU)\n"
                 "  threads     one process, a thread and a loader per point, one GPU\n"
                 "  shared      one process; points that read the same batches share one loader\n"
                 "Running the same command again skips finished points and resumes stopped ones.\n"
                 "Before any work the grid's memory is estimated (docs/recipes.md): fewer points\n"
                 "run at once when all of them would not fit, and a grid of which not even one\n"
                 "point fits is refused. --no-grid runs a grid recipe as one run. A failed\n"
                 "point's first error line reaches stderr even with --quiet. A run, grid or\n"
                 "point folder is locked while a process trains into it: a second command\n"
                 "into it is refused, naming the first one's pid.\n"
                 "\n"
                 "A recipe with a [saga] table instead fits sparse linear models by SAGA fed by\n"
                 "the loader (elastic-net or many-target lasso paths; docs/recipes.md), writing\n"
                 "path.csv, weights.npy and summary.json; --set data.loader=mmap runs the\n"
                 "memory-mapped .npy baseline on the same batches. The model is selected on the\n"
                 "validation rows by saga.selection; a run whose memory estimate exceeds what is\n"
                 "available (or saga.memory_limit_gib) is refused before its first pass.");
  args.positional("RECIPE", "the recipe, e.g. recipes/fashion_mnist.toml")
      .repeated_option("set", "SECTION.KEY=VALUE", "override one recipe key (repeatable)")
      .option("nproc", "N", "ranks to start on this machine [default: dist.world_size]")
      .int_range(1, kMaxRanks)
      .option("output-dir", "DIR",
              "the run's folder [default: logging.folder/NAME-DATE-TIME]; with a grid, the "
              "grid's [default: logging.folder/NAME-grid-DATE-TIME]")
      .non_empty()
      .option("stop-after-steps", "N", "stop with a checkpoint after N training iterations")
      .int_range(1, kMaxSteps)
      .repeated_option("grid", "SECTION.KEY=V1,V2,...",
                       "train a grid: one run per combination of values (repeatable; adds to "
                       "the recipe's [grid])")
      .option("placement", "P",
              "grid: sequential | processes | threads | shared [default: grid.placement]")
      .non_empty()
      .option("parallel", "N",
              "grid: processes, threads or shared groups at once [default: grid.parallel]")
      .int_range(0, 4096)
      .option("point", "I",
              "grid: train point I alone, in --output-dir (a cluster job array's task; "
              "default: $SLURM_ARRAY_TASK_ID when set)")
      .int_range(0, kMaxPoints)
      .flag("gather", "grid: write the table from the point folders in --output-dir, and exit")
      .flag("fresh",
            "grid: move the earlier results in --output-dir aside (to DIR-before-DATE-TIME) and "
            "start the grid afresh; needed once the recipe or its data changed")
      .flag("no-grid", "train the recipe as one run, leaving its [grid] section aside")
      .flag("no-memory-check",
            "grid: start even when the memory estimate says one point alone does not fit")
      .flag("print-recipe", "print the resolved recipe (defaults and overrides) and exit")
      .flag("quiet", "print nothing but errors");
  return args;
}

// A run folder made by this command, removed again (with the logging folder, when this command
// made that too and it is left empty) if the run ends in an error before it trained: a failed
// start leaves no empty folders behind. A folder with a checkpoint, or whose log.jsonl records
// a failure in training (a storage error in the first epoch, say), stays.
class NewRunFolder {
 public:
  NewRunFolder() = default;
  explicit NewRunFolder(const std::string& dir) : dir_(dir) {
    const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
    if (!parent.empty() && !std::filesystem::exists(parent)) parent_ = parent.string();
    std::filesystem::create_directories(dir);
  }
  ~NewRunFolder() {
    if (dir_.empty() || kept_) return;
    std::error_code error;
    if (std::filesystem::exists(std::filesystem::path(dir_) / "checkpoint.pt", error)) return;
    const std::string log =
        read_text_if_present((std::filesystem::path(dir_) / "log.jsonl").string());
    if (log.find("\"event\": \"failed\"") != std::string::npos) return;
    // Not std::filesystem::remove_all: LibTorch exports a copy of it that crashes here.
    remove_tree_signal_safe(dir_.c_str());
    if (!parent_.empty() && std::filesystem::is_empty(parent_, error)) {
      std::filesystem::remove(parent_, error);
    }
  }
  NewRunFolder(const NewRunFolder&) = delete;
  NewRunFolder& operator=(NewRunFolder&& other) noexcept {
    std::swap(dir_, other.dir_);
    std::swap(parent_, other.parent_);
    return *this;
  }
  void keep() { kept_ = true; }

 private:
  std::string dir_, parent_;
  bool kept_ = false;
};

// An --output-dir must be new, empty, or an earlier run's folder (it holds recipe.toml): the run
// writes recipe.toml, log.jsonl, checkpoint.pt and summary.json into it.
void check_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(dir, error)) return;
  if (!fs::is_directory(dir, error)) {
    throw UsageError("--output-dir " + dir + " exists and is not a folder");
  }
  // A run training into it: named first, whatever the folder holds yet.
  if (const long holder = train::folder_lock_holder(dir); holder > 0 && holder != ::getpid()) {
    throw train::FolderBusyError(train::folder_busy_message(dir, "run folder", holder));
  }
  // Its lock file alone (a run killed before it wrote anything) leaves it empty.
  bool empty = true;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().filename() != ".lock") empty = false;
  }
  if (!empty && !fs::exists(fs::path(dir) / "recipe.toml", error)) {
    throw UsageError("--output-dir " + dir +
                     " holds files of something other than a run (no recipe.toml); choose a new "
                     "or empty folder");
  }
}

// "YYYYMMDD-HHMMSS", local time: the suffix of new run and grid folders.
std::string run_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return stamp;
}

// FOLDER/NAME-YYYYMMDD-HHMMSS, with -2, -3, ... when that exists already.
std::string new_run_dir(const std::string& folder, const std::string& name) {
  const std::string base = folder + "/" + name + "-" + run_stamp();
  std::string dir = base;
  for (int n = 2; std::filesystem::exists(dir); ++n) dir = base + "-" + std::to_string(n);
  return dir;
}

// Ctrl-C and SIGTERM stop the run after the current batch, with a checkpoint.
void stop_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// CUDA device ids a grid's points may use: none when the recipe trains on the CPU or there is no
// GPU; else CUDA_VISIBLE_DEVICES's entries, or 0..N-1.
std::vector<std::string> grid_gpus(const train::Recipe& recipe) {
  const int count = train::cuda_device_count();
  if (recipe.training.device == "cpu" || count == 0) return {};
  std::vector<std::string> ids;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    for (const std::string& id : train::split_grid_values(visible)) ids.push_back(id);
  } else {
    for (int i = 0; i < count; ++i) ids.push_back(std::to_string(i));
  }
  return ids;
}

std::string joined(const CommandArgs& argv) {
  std::string text = "ffcv run";
  for (const std::string& a : argv) text += " " + a;
  return text;
}

// What point `point` of the grid trains with: the command line's overrides, then the point's,
// then checkpoint.resume when it stopped with a checkpoint. Readies its folder: an earlier error
// is dropped on resume; a failed or unfinished start begins again from nothing.
std::vector<std::string> prepare_point(const GridInvocation& grid, const train::GridPoint& point,
                                       const train::RunResults& before) {
  const std::string dir = point_dir(grid, point.index);
  std::vector<std::string> overrides = grid.overrides;
  overrides.insert(overrides.end(), point.overrides.begin(), point.overrides.end());
  if (before.state == train::RunState::kStopped) {
    overrides.push_back("checkpoint.resume=" + dir + "/checkpoint.pt");
    train::clear_run_error(dir);
  } else {
    train::clear_run_files(dir);
  }
  return overrides;
}

// The options of the run of point `index` into its folder.
train::RunOptions point_options(const GridInvocation& grid, std::size_t index,
                                const std::string& stop_after) {
  train::RunOptions options;
  options.run_dir = point_dir(grid, index);
  options.quiet = grid.quiet;
  options.stop = &g_stop;
  if (!stop_after.empty()) options.stop_after_steps = std::stoull(stop_after);
  return options;
}

// One point of a grid, trained in this process into its folder: skipped when finished, resumed
// from its checkpoint when stopped, started again otherwise. An error is recorded in the point's
// folder (error.txt) for the grid's table, then reported as usual.
int run_grid_point(const GridInvocation& grid, std::size_t index, const std::string& stop_after) {
  const train::GridPoint& point = grid.points[index];
  const std::string dir = point_dir(grid, index);
  // Before its files are read or cleared: no other process trains into the point's folder.
  const train::FolderLock point_lock(dir, "point folder");
  const train::RunResults before = train::read_run_results(dir);
  if (before.state == train::RunState::kFinished) {
    if (!grid.quiet) std::printf("point %zu already finished: %s\n", index, dir.c_str());
    return 0;
  }
  const std::vector<std::string> overrides = prepare_point(grid, point, before);
  try {
    const train::Recipe recipe = train::load_recipe(grid.recipe_path, overrides);
    train::check_labels_fit_model(recipe);
    stop_on_interrupt();
    const train::RunOptions options = point_options(grid, index, stop_after);
    if (!grid.quiet) std::printf("point %zu: %s\n", index, point.label.c_str());
    const train::RunSummary summary = train::run_training(recipe, options);
    if (!grid.quiet && summary.finished) {
      std::printf("point %zu done: validation top-1 %.2f%%\n", index, 100 * summary.val_top1);
    }
    return summary.finished || !g_stop.load() ? 0 : 130;
  } catch (const std::exception& error) {
    train::write_run_error(dir, error.what());
    throw;
  }
}

// The grid's points in this process (placements threads and shared): finished points are
// skipped, stopped ones resume from their checkpoints, a point whose recipe does not load fails
// alone.
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
  const train::Recipe base = train::load_recipe(grid.recipe_path, grid.overrides);
  const int parallel = resolve_grid_parallel(grid, base);
  std::vector<train::TogetherRun> runs;
  std::vector<train::FolderLock> point_locks;  // every point this process trains, held throughout
  std::vector<std::size_t> indices;
  std::size_t finished = 0, failed = 0;
  for (const train::GridPoint& point : grid.points) {
    const std::string dir = point_dir(grid, point.index);
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
    run.options = point_options(grid, point.index, stop_after);
    run.options.label = "point " + std::to_string(point.index);
    runs.push_back(std::move(run));
    indices.push_back(point.index);
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
    train::write_run_error(point_dir(grid, indices[k]), outcomes[k].error);
    report_failed_point(indices[k], outcomes[k].error);
  }
  report_grid(grid);
  if (g_stop.load()) {
    if (!grid.quiet) {
      std::printf("grid: interrupted; run the same command again to go on where it stopped\n");
    }
    return 130;
  }
  return failed > 0 ? 1 : 0;
}

// How many points (shared: groups) run at once so that the grid's estimated memory fits what is
// available; refuses (UsageError) a grid of which not even one point fits, unless `unchecked`.
GridMemoryPlan grid_memory_plan(const GridInvocation& grid, const train::Recipe& base,
                                const std::vector<train::Recipe>& recipes, bool unchecked) {
  const bool on_gpu = !grid.gpus.empty();
  std::vector<PointMemory> memory;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    memory.push_back(estimate_point_memory(recipes[i], on_gpu));
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return train::shares_batches(recipes[g.front()], recipes[i], grid.spec.share_seeds);
    });
    if (group == groups.end()) {
      groups.push_back({i});
    } else {
      group->push_back(i);
    }
  }
  const int asked = resolve_grid_parallel(grid, base);
  const double available = static_cast<double>(available_memory_bytes());
  if (available <= 0 || memory.empty()) {
    GridMemoryPlan as_asked;
    as_asked.at_once = asked;
    return as_asked;
  }
  GridMemoryPlan plan = plan_grid_memory(grid.spec.placement, asked, memory, groups, available);
  if (!plan.fits) {
    const PointMemory& one = *std::max_element(
        memory.begin(), memory.end(), [](const PointMemory& a, const PointMemory& b) {
          return a.host_model_bytes() + a.loader < b.host_model_bytes() + b.loader;
        });
    const std::string estimate =
        "the grid needs about " + byte_size_text(plan.needed) + " of memory even one point at a " +
        "time (model " + byte_size_text(one.on_gpu ? 0 : one.model) + ", activations " +
        byte_size_text(one.on_gpu ? 0 : one.activations) + ", loader " +
        byte_size_text(one.loader) + ", process " + byte_size_text(kProcessBytes) +
        "; docs/recipes.md, \"Memory\"), more than the " + byte_size_text(available) + " available";
    if (!unchecked) {
      throw UsageError(estimate +
                       "; lower training.batch_size, the resolution or data.batches_ahead, or "
                       "pass --no-memory-check to start anyway");
    }
    std::fprintf(stderr, "ffcv run: warning: %s; starting anyway (--no-memory-check)\n",
                 estimate.c_str());
    plan.at_once = asked;
    plan.models_per_group = 0;
    return plan;
  }
  if (unchecked) {
    plan.at_once = asked;
    plan.models_per_group = 0;
    return plan;
  }
  const bool fewer = plan.needed < plan.requested;
  if (fewer && !grid.quiet) {
    std::string how = std::to_string(plan.at_once) + " at once";
    if (plan.models_per_group > 0) {
      how = "one group at a time, in turns of " + std::to_string(plan.models_per_group) + " models";
    }
    std::printf(
        "grid: memory: all at once would need about %s, more than the %s available; %s "
        "(about %s), the others wait their turn\n",
        byte_size_text(plan.requested).c_str(), byte_size_text(available).c_str(), how.c_str(),
        byte_size_text(plan.needed).c_str());
    std::fflush(stdout);
  }
  return plan;
}

// `ffcv run` with a grid: the whole grid, one point (--point or a job array's task), or the table.
int grid_command(const Arguments& args, const CommandArgs& argv, const train::GridSpec& spec) {
  GridInvocation grid;
  grid.recipe_path = args.get("RECIPE");
  grid.overrides = args.get_all("set");
  grid.grid_axes = args.get_all("grid");
  grid.spec = spec;
  grid.points = train::grid_points(spec);
  grid.quiet = args.get_flag("quiet");
  grid.command_line = redact_url_passwords(joined(argv));  // shown in the grid's tables
  check_set_not_swept(grid.overrides, spec);
  const train::Recipe base = train::load_recipe(grid.recipe_path, grid.overrides);
  if (args.has("nproc")) throw UsageError("--nproc: a grid trains each point as one process");
  if (args.get_flag("print-recipe")) {
    for (const train::GridPoint& point : grid.points) {
      std::vector<std::string> overrides = grid.overrides;
      overrides.insert(overrides.end(), point.overrides.begin(), point.overrides.end());
      std::printf("# point %zu: %s\n", point.index, point.label.c_str());
      std::fputs(train::recipe_to_toml(train::load_recipe(grid.recipe_path, overrides)).c_str(),
                 stdout);
    }
    return 0;
  }

  std::optional<std::size_t> point;
  if (args.has("point")) {
    point = static_cast<std::size_t>(args.get_int("point"));
  } else if (const char* task = std::getenv("SLURM_ARRAY_TASK_ID"); task != nullptr) {
    point = array_task_point(task, kMaxPoints);
  }
  if (point && *point >= grid.points.size()) {
    throw UsageError("point " + std::to_string(*point) + " is not in the grid: it has " +
                     std::to_string(grid.points.size()) + " points, 0 to " +
                     std::to_string(grid.points.size() - 1));
  }
  if ((point || args.get_flag("gather")) && !args.has("output-dir")) {
    throw UsageError(std::string(point ? "a single point" : "--gather") +
                     " needs the grid's folder: give --output-dir GRID_DIR");
  }
  if (args.has("output-dir")) {
    grid.grid_dir = args.get("output-dir");
  } else {
    grid.grid_dir = base.logging.folder + "/" + base.name + "-grid-" + run_stamp();
  }
  const bool fresh = args.get_flag("fresh");
  if (fresh && (point || args.get_flag("gather"))) {
    throw UsageError(std::string("--fresh starts the whole grid afresh: it does not go with ") +
                     (point ? "one point (--point, SLURM_ARRAY_TASK_ID)" : "--gather"));
  }
  if (args.get_flag("gather")) {
    if (!std::filesystem::is_directory(grid.grid_dir)) {
      throw UsageError("--output-dir " + grid.grid_dir + ": no such grid folder");
    }
    ready_grid_folder(grid, GridFolderUse::kGather, false);
    return gather_grid_command(grid);
  }
  const std::string stop_after =
      args.has("stop-after-steps") ? std::to_string(args.get_int("stop-after-steps")) : "";
  if (point) {
    ready_grid_folder(grid, GridFolderUse::kOnePoint, false);
    return run_grid_point(grid, *point, stop_after);
  }

  // The whole grid: what every point depends on, checked once before any work.
  std::vector<train::Recipe> recipes;
  for (const train::GridPoint& p : grid.points) {
    std::vector<std::string> overrides = grid.overrides;
    overrides.insert(overrides.end(), p.overrides.begin(), p.overrides.end());
    try {
      recipes.push_back(train::load_recipe(grid.recipe_path, overrides));
    } catch (const ConfigError&) {
      // That point fails alone when its turn comes, with this error in its folder.
    }
  }
  check_data_paths(recipes, grid.recipe_path);
  grid.gpus = grid_gpus(base);
  const GridMemoryPlan plan =
      grid_memory_plan(grid, base, recipes, args.get_flag("no-memory-check"));
  // Held until the grid ends: no second command runs this grid meanwhile.
  const train::FolderLock grid_lock = ready_grid_folder(grid, GridFolderUse::kWholeGrid, fresh);
  grid.spec.parallel = plan.at_once;
  if (grid.spec.placement == "threads" || grid.spec.placement == "shared") {
    return run_grid_together(grid, stop_after, plan.models_per_group);
  }
  grid.stop_after_steps = stop_after;
  // Remote data is pinned here, so that every point's process reads this version of it.
  for (const std::string& data : {base.data.train, base.data.val}) {
    if (is_url(data)) open_range_reader(data);
  }
  return run_grid_command(grid, this_program());
}

// A SAGA recipe ([saga]): one solve (trainer/saga), no ranks and no grid.
int run_saga_recipe(const Arguments& args) {
  for (const char* option :
       {"grid", "placement", "parallel", "point", "nproc", "stop-after-steps"}) {
    if (args.has(option)) {
      throw UsageError(std::string("--") + option + " belongs to training recipes; " +
                       args.get("RECIPE") + " is a SAGA recipe ([saga])");
    }
  }
  for (const char* flag : {"gather", "no-memory-check", "fresh"}) {
    if (args.get_flag(flag)) {
      throw UsageError(std::string("--") + flag + " belongs to grids; " + args.get("RECIPE") +
                       " is a SAGA recipe");
    }
  }
  const saga::SagaRecipe recipe = saga::load_saga_recipe(args.get("RECIPE"), args.get_all("set"));
  if (args.get_flag("print-recipe")) {
    std::fputs(saga::saga_recipe_to_toml(recipe).c_str(), stdout);
    return 0;
  }
  std::string run_dir;
  NewRunFolder made_here;
  if (args.has("output-dir")) {
    run_dir = args.get("output-dir");
    check_output_dir(run_dir);
    std::filesystem::create_directories(run_dir);
  } else {
    run_dir = new_run_dir(recipe.logging.folder, recipe.name);
    made_here = NewRunFolder(run_dir);
  }
  stop_on_interrupt();
  saga::SagaRunOptions options;
  options.run_dir = run_dir;
  options.quiet = args.get_flag("quiet");
  options.stop = &g_stop;
  saga::SagaRunSummary summary;
  try {
    summary = saga::run_saga(recipe, options);
  } catch (const saga::SolveStopped&) {
    std::fprintf(stderr, "ffcv run: stopped before the path was complete; nothing was saved\n");
    return 130;
  }
  made_here.keep();
  if (!options.quiet) {
    const std::string plot = run_plot_script(FFCV_PLOT_PYTHON, FFCV_SAGA_PLOT_SCRIPT, run_dir);
    if (!plot.empty()) std::printf("%s\n", plot.c_str());
    std::printf(
        "done: %llu epochs in %.1f s (%.3f s per epoch, %.2fx the %.3f s of one pass over the "
        "features); %s with %llu nonzero weights\noutput: %s\n",
        static_cast<unsigned long long>(summary.epochs), summary.seconds, summary.seconds_per_epoch,
        summary.stream_seconds_per_epoch > 0
            ? summary.seconds_per_epoch / summary.stream_seconds_per_epoch
            : 0.0,
        summary.stream_seconds_per_epoch, summary.selection_text.c_str(),
        static_cast<unsigned long long>(summary.nnz), run_dir.c_str());
  }
  return 0;
}

}  // namespace

int run_command(const CommandArgs& argv) {
  Arguments args = run_arguments();
  if (!args.parse(argv)) return 0;
  if (saga::is_saga_recipe(args.get("RECIPE"))) return run_saga_recipe(args);
  if (args.get_flag("no-grid")) {
    for (const char* option : {"grid", "placement", "parallel", "point"}) {
      if (args.has(option)) {
        throw UsageError(std::string("--") + option + " belongs to a grid, and --no-grid trains " +
                         "the recipe as one run");
      }
    }
    for (const char* flag : {"gather", "no-memory-check", "fresh"}) {
      if (args.get_flag(flag)) {
        throw UsageError(std::string("--") + flag + " belongs to a grid, and --no-grid trains " +
                         "the recipe as one run");
      }
    }
  } else {
    train::GridSpec spec;
    try {
      spec =
          train::load_grid(args.get("RECIPE"), args.get_all("grid"),
                           args.has("placement") ? args.get("placement") : "",
                           args.has("parallel") ? static_cast<int>(args.get_int("parallel")) : -1);
    } catch (const train::GridOptionError& error) {
      throw UsageError(error.what());
    }
    if (!spec.empty()) return grid_command(args, argv, spec);
    for (const char* option : {"placement", "parallel", "point"}) {
      if (args.has(option)) {
        throw UsageError(std::string("--") + option + " belongs to a grid, and " +
                         args.get("RECIPE") + " has no [grid] and no --grid was given");
      }
    }
    for (const char* flag : {"gather", "no-memory-check", "fresh"}) {
      if (args.get_flag(flag)) {
        throw UsageError(std::string("--") + flag + " belongs to a grid, and " +
                         args.get("RECIPE") + " has no [grid] and no --grid was given");
      }
    }
  }
  const std::vector<std::string> overrides = args.get_all("set");
  const train::Recipe recipe = train::load_recipe(args.get("RECIPE"), overrides);
  if (args.get_flag("print-recipe")) {
    std::fputs(train::recipe_to_toml(recipe).c_str(), stdout);
    return 0;
  }
  const bool is_rank = std::getenv("WORLD_SIZE") != nullptr;
  const long long nproc = args.has("nproc") ? args.get_int("nproc") : recipe.dist.world_size;
  if (nproc < 1 || nproc > kMaxRanks) {
    throw UsageError("--nproc must be between 1 and " + std::to_string(kMaxRanks) +
                     ", got dist.world_size " + std::to_string(nproc) + " from the recipe");
  }

  // Before any folder is made: a dataset whose labels do not fit the model.
  if (!is_rank) train::check_labels_fit_model(recipe);
  std::string run_dir;
  NewRunFolder made_here;
  if (args.has("output-dir")) {
    run_dir = args.get("output-dir");
    if (!is_rank) check_output_dir(run_dir);
  } else if (!is_rank || std::getenv("RANK") == std::string("0")) {
    run_dir = new_run_dir(recipe.logging.folder, recipe.name);
    made_here = NewRunFolder(run_dir);
  }

  if (!is_rank && nproc > 1) {
    // Re-run this program once per rank, with the same arguments and one shared folder.
    std::vector<std::string> rank_args;
    for (std::size_t i = 0; i < argv.size(); ++i) {
      if (argv[i] == "--nproc") {
        ++i;
        continue;
      }
      if (argv[i].rfind("--nproc=", 0) == 0 || argv[i] == "--output-dir" ||
          argv[i].rfind("--output-dir=", 0) == 0) {
        if (argv[i] == "--output-dir") ++i;
        continue;
      }
      rank_args.push_back(argv[i]);
    }
    rank_args.push_back("--output-dir=" + run_dir);
    if (!args.get_flag("quiet")) {
      std::printf("starting %lld ranks; output: %s\n", nproc, run_dir.c_str());
      std::fflush(stdout);
    }
    const int status = launch_ranks(this_program(), rank_args, static_cast<int>(nproc));
    if (status == 0) made_here.keep();
    return status;
  }

  stop_on_interrupt();

  train::RunOptions options;
  options.run_dir = run_dir;
  options.quiet = args.get_flag("quiet");
  const std::string& progress = recipe.logging.progress;
  options.progress = progress == "always" || (progress == "auto" && ::isatty(STDERR_FILENO));
  options.stop = &g_stop;
  if (args.has("stop-after-steps")) {
    options.stop_after_steps = static_cast<std::uint64_t>(args.get_int("stop-after-steps"));
  }
  const Stopwatch start;
  const train::RunSummary summary = train::run_training(recipe, options);
  made_here.keep();
  const double seconds = start.seconds();
  const bool main_rank = !is_rank || std::getenv("RANK") == std::string("0");
  if (main_rank && !options.quiet) {
    if (summary.finished) {
      std::printf(
          "done: %llu epochs in %.1f s (%.1f s training, %.0f images/s); validation "
          "top-1 %.2f%%, top-5 %.2f%%\n",
          static_cast<unsigned long long>(summary.epochs_done), seconds, summary.train_seconds,
          summary.images_per_second, 100 * summary.val_top1, 100 * summary.val_top5);
    } else {
      std::printf("stopped; resume with: ffcv run %s --set checkpoint.resume=%s/checkpoint.pt\n",
                  args.get("RECIPE").c_str(), summary.run_dir.c_str());
    }
    if (!summary.run_dir.empty()) std::printf("output: %s\n", summary.run_dir.c_str());
  }
  if (!summary.replicas_identical) {
    throw Error("the ranks' parameters differ at the end of the run");
  }
  return summary.finished || !g_stop.load() ? 0 : 130;
}

}  // namespace ffcv::tools
