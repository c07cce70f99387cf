// `ffcv run RECIPE.toml [--set section.key=value ...] [--nproc N]`: trains what the recipe
// describes (trainer/), as one process or as N ranks on this machine. A recipe with a grid is
// handed to grid/grid_recipe_run.hpp; a SAGA recipe ([saga]) is solved here by trainer/saga.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "cli/run_command.hpp"
#include "common/arguments.hpp"
#include "common/child_process.hpp"
#include "common/rank_launcher.hpp"
#include "common/run_folder_name.hpp"
#include "common/stop_request.hpp"
#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_run.hpp"
#include "ffcv/saga/saga_step.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/grid.hpp"
#include "ffcv/train/override_error.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/resume_check.hpp"
#include "ffcv/train/trainer.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/interrupt_cleanup.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "ffcv/util/text_file.hpp"
#include "grid/grid_recipe_run.hpp"

namespace ffcv::tools {
namespace {

// Ranks one launcher starts, and the furthest --stop-after-steps.
constexpr long long kMaxRanks = 1024;
constexpr long long kMaxSteps = 1'000'000'000'000;

Arguments run_arguments() {
  Arguments args("run",
                 "Train the model a TOML recipe describes (docs/recipes.md): ResNet fed by the\n"
                 "loader, evaluated with test-time augmentation. Writes recipe.toml, log.jsonl,\n"
                 "checkpoint.pt and summary.json into the run's folder. Ctrl-C (exit 130) or\n"
                 "SIGTERM (exit 143) stops after the current batch with a checkpoint, and the run\n"
                 "prints the command that resumes it: its folder's recipe.toml (the recipe with\n"
                 "every --set applied) with --set checkpoint.resume=RUN/checkpoint.pt. A resume\n"
                 "whose recipe differs from the checkpoint's is refused, naming the keys. A --set\n"
                 "the recipe refuses (an unknown key, a value out of range) exits 2.\n"
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
                       "train a grid: one run per combination of values (repeatable; adds an "
                       "axis to the recipe's own [grid], or replaces its axis of that key, and "
                       "says so)")
      .option("placement", "P",
              "grid: sequential | processes | threads | shared [default: grid.placement]")
      .non_empty()
      .option("parallel", "N",
              "grid: processes, threads or shared groups at once [default: grid.parallel]")
      .int_range(0, 4096)
      .option("point", "I",
              "grid: train point I alone, in --output-dir (a cluster job array's task; "
              "default: $SLURM_ARRAY_TASK_ID when set)")
      .int_range(0, kMaxGridPoints)
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

// `load()`, the recipe with the command line's --set: an override the recipe refuses (an unknown
// key, a value of the wrong type or out of range) is a bad command line, exit status 2; an error
// of the recipe file itself stays a ConfigError (exit status 1).
template <typename Load>
auto with_overrides_checked(Load&& load) {
  try {
    return load();
  } catch (const train::OverrideError& error) {
    throw UsageError(error.what());
  }
}

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
  const saga::SagaRecipe recipe = with_overrides_checked(
      [&] { return saga::load_saga_recipe(args.get("RECIPE"), args.get_all("set")); });
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
  options.stop = &stop_requested();
  saga::SagaRunSummary summary;
  try {
    summary = saga::run_saga(recipe, options);
  } catch (const saga::SolveStopped&) {
    std::fprintf(stderr, "ffcv run: stopped before the path was complete; nothing was saved\n");
    return interrupted_status(stop_signal());
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

// Refuses each of `options`, and of the grid's flags (--gather, --no-memory-check, --fresh),
// given on the command line: they belong to a grid, and `why` says why there is none ("--X
// belongs to a grid, and WHY").
void reject_grid_options(const Arguments& args, std::initializer_list<const char*> options,
                         const std::string& why) {
  for (const char* option : options) {
    if (args.has(option)) {
      throw UsageError(std::string("--") + option + " belongs to a grid, and " + why);
    }
  }
  for (const char* flag : {"gather", "no-memory-check", "fresh"}) {
    if (args.get_flag(flag)) {
      throw UsageError(std::string("--") + flag + " belongs to a grid, and " + why);
    }
  }
}

// The grid the recipe and the command line describe (empty with --no-grid, or with none); the
// options of a grid are refused without one.
train::GridSpec grid_of(const Arguments& args) {
  if (args.get_flag("no-grid")) {
    reject_grid_options(args, {"grid", "placement", "parallel", "point"},
                        "--no-grid trains the recipe as one run");
    return {};
  }
  train::GridSpec spec;
  try {
    spec = train::load_grid(args.get("RECIPE"), args.get_all("grid"),
                            args.has("placement") ? args.get("placement") : "",
                            args.has("parallel") ? static_cast<int>(args.get_int("parallel")) : -1);
  } catch (const train::GridOptionError& error) {
    throw UsageError(error.what());
  }
  if (spec.empty()) {
    reject_grid_options(args, {"placement", "parallel", "point"},
                        args.get("RECIPE") + " has no [grid] and no --grid was given");
  }
  return spec;
}

// The ranks to start: --nproc, else the recipe's dist.world_size.
long long rank_count(const Arguments& args, const train::Recipe& recipe) {
  const long long nproc = args.has("nproc") ? args.get_int("nproc") : recipe.dist.world_size;
  if (nproc < 1 || nproc > kMaxRanks) {
    throw UsageError("--nproc must be between 1 and " + std::to_string(kMaxRanks) +
                     ", got dist.world_size " + std::to_string(nproc) + " from the recipe");
  }
  return nproc;
}

// Re-runs this program once per rank, with the same arguments and one shared folder `run_dir`;
// returns the launcher's status. The folder stays when every rank succeeded.
int run_ranks(const Arguments& args, const CommandArgs& argv, const std::string& run_dir,
              long long nproc, NewRunFolder& made_here) {
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

// How this process trains: into `run_dir`, stopped by Ctrl-C or --stop-after-steps.
train::RunOptions run_options(const Arguments& args, const train::Recipe& recipe,
                              const std::string& run_dir) {
  train::RunOptions options;
  options.run_dir = run_dir;
  options.quiet = args.get_flag("quiet");
  const std::string& progress = recipe.logging.progress;
  options.progress = progress == "always" || (progress == "auto" && ::isatty(STDERR_FILENO));
  options.stop = &stop_requested();
  if (args.has("stop-after-steps")) {
    options.stop_after_steps = static_cast<std::uint64_t>(args.get_int("stop-after-steps"));
  }
  return options;
}

// The run's last lines: its results (or how to resume it) and its folder.
void print_run_summary(const train::RunSummary& summary, double seconds) {
  if (summary.finished) {
    std::printf(
        "done: %llu epochs in %.1f s (%.1f s training, %.0f images/s); validation "
        "top-1 %.2f%%, top-5 %.2f%%\n",
        static_cast<unsigned long long>(summary.epochs_done), seconds, summary.train_seconds,
        summary.images_per_second, 100 * summary.val_top1, 100 * summary.val_top5);
  } else {
    // The run's own recipe, every --set applied (resume_check.hpp): the same run, not the
    // recipe file with none of this command's overrides.
    std::printf(
        "stopped; resume with: %s\n",
        train::resume_command((std::filesystem::path(summary.run_dir) / "checkpoint.pt").string())
            .c_str());
  }
  if (!summary.run_dir.empty()) std::printf("output: %s\n", summary.run_dir.c_str());
}

}  // namespace

int run_command(const CommandArgs& argv) {
  Arguments args = run_arguments();
  if (!args.parse(argv)) return 0;
  if (saga::is_saga_recipe(args.get("RECIPE"))) return run_saga_recipe(args);
  if (const train::GridSpec spec = grid_of(args); !spec.empty()) {
    return run_grid_recipe(args, argv, spec);
  }
  const std::vector<std::string> overrides = args.get_all("set");
  const train::Recipe recipe =
      with_overrides_checked([&] { return train::load_recipe(args.get("RECIPE"), overrides); });
  if (args.get_flag("print-recipe")) {
    std::fputs(train::recipe_to_toml(recipe).c_str(), stdout);
    return 0;
  }
  const bool is_rank = std::getenv("WORLD_SIZE") != nullptr;
  const long long nproc = rank_count(args, recipe);

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
  if (!is_rank && nproc > 1) return run_ranks(args, argv, run_dir, nproc, made_here);

  stop_on_interrupt();
  const train::RunOptions options = run_options(args, recipe, run_dir);
  const Stopwatch start;
  const train::RunSummary summary = train::run_training(recipe, options);
  made_here.keep();
  const double seconds = start.seconds();
  const bool main_rank = !is_rank || std::getenv("RANK") == std::string("0");
  if (main_rank && !options.quiet) print_run_summary(summary, seconds);
  if (!summary.replicas_identical) {
    throw Error("the ranks' parameters differ at the end of the run");
  }
  return summary.finished || !stop_requested().load() ? 0 : interrupted_status(stop_signal());
}

}  // namespace ffcv::tools
