// `ffcv run RECIPE.toml [--set section.key=value ...] [--nproc N]`: trains what the recipe
// describes (trainer/), as one process or as N ranks on this machine.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "cli/arguments.hpp"
#include "cli/rank_launcher.hpp"
#include "cli/run_command.hpp"
#include "ffcv/errors.hpp"
#include "ffcv/interrupt_cleanup.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/trainer.hpp"

namespace ffcv::tools {
namespace {

// Ranks one launcher starts, and the furthest --stop-after-steps.
constexpr long long kMaxRanks = 1024;
constexpr long long kMaxSteps = 1'000'000'000'000;

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop.store(true); }

Arguments run_arguments() {
  Arguments args("run",
                 "Train the model a TOML recipe describes (docs/recipes.md): ResNet fed by the\n"
                 "loader, evaluated with test-time augmentation. Writes recipe.toml, log.jsonl,\n"
                 "checkpoint.pt and summary.json into the run's folder. Ctrl-C stops after the\n"
                 "current batch with a checkpoint; resume with --set checkpoint.resume=PATH.");
  args.positional("RECIPE", "the recipe, e.g. recipes/fashion_mnist.toml")
      .repeated_option("set", "SECTION.KEY=VALUE", "override one recipe key (repeatable)")
      .option("nproc", "N", "ranks to start on this machine [default: dist.world_size]")
      .int_range(1, kMaxRanks)
      .option("output-dir", "DIR", "the run's folder [default: logging.folder/NAME-DATE-TIME]")
      .option("stop-after-steps", "N", "stop with a checkpoint after N training iterations")
      .int_range(1, kMaxSteps)
      .flag("print-recipe", "print the resolved recipe (defaults and overrides) and exit")
      .flag("quiet", "print nothing but errors");
  return args;
}

// A run folder made by this command, removed again (with the logging folder, when this command
// made that too and it is left empty) if the run ends in an error before saving a checkpoint:
// a failed start leaves no empty folders behind.
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
  if (!fs::is_empty(dir, error) && !fs::exists(fs::path(dir) / "recipe.toml", error)) {
    throw UsageError("--output-dir " + dir +
                     " holds files of something other than a run (no recipe.toml); choose a new "
                     "or empty folder");
  }
}

// logging.folder/NAME-YYYYMMDD-HHMMSS, with -2, -3, ... when that exists already.
std::string new_run_dir(const train::Recipe& recipe) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  const std::string base = recipe.logging.folder + "/" + recipe.name + "-" + stamp;
  std::string dir = base;
  for (int n = 2; std::filesystem::exists(dir); ++n) dir = base + "-" + std::to_string(n);
  return dir;
}

}  // namespace

int run_command(const CommandArgs& argv) {
  Arguments args = run_arguments();
  if (!args.parse(argv)) return 0;
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
    run_dir = new_run_dir(recipe);
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

  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  train::RunOptions options;
  options.run_dir = run_dir;
  options.quiet = args.get_flag("quiet");
  const std::string& progress = recipe.logging.progress;
  options.progress = progress == "always" || (progress == "auto" && ::isatty(STDERR_FILENO));
  options.stop = &g_stop;
  if (args.has("stop-after-steps")) {
    options.stop_after_steps = static_cast<std::uint64_t>(args.get_int("stop-after-steps"));
  }
  const auto start = std::chrono::steady_clock::now();
  const train::RunSummary summary = train::run_training(recipe, options);
  made_here.keep();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
