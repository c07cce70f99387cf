#include "grid/grid_recipe_run.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "common/run_folder_name.hpp"
#include "common/spawn.hpp"
#include "ffcv/format/beton_file.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/override_error.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/train_together.hpp"
#include "ffcv/train/trainer.hpp"
#include "ffcv/util/available_memory.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "grid/grid_command.hpp"
#include "grid/grid_memory.hpp"
#include "grid/grid_preflight.hpp"
#include "grid/grid_together.hpp"

namespace ffcv::tools {
namespace {

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

// The command line as given, for the grid's tables.
std::string joined(const std::vector<std::string>& argv) {
  std::string text = "ffcv run";
  for (const std::string& a : argv) text += " " + a;
  return text;
}

// The samples of the .beton file at `path`, from its header; 0 for a URL, or a file that cannot
// be read or whose header does not hold together (the loader reports those in their turn).
std::uint64_t beton_samples(const std::string& path) {
  if (is_url(path)) return 0;
  const std::optional<Header> header = read_beton_header(path);
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  // Every sample has a metadata record of at least one byte in the file.
  if (!header || error || header->num_samples > size) return 0;
  return header->num_samples;
}

// How many points (shared: groups) run at once so that the grid's estimated memory fits its
// share of what is available, one per core at most unless grid.parallel asks for more (the plan
// is printed); refuses (UsageError) a grid of which not even one point fits, unless `unchecked`.
GridMemoryPlan grid_memory_plan(const GridInvocation& grid,
                                const std::vector<train::Recipe>& recipes, bool unchecked) {
  const bool on_gpu = !grid.gpus.empty();
  std::vector<PointMemory> memory;
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string, std::uint64_t> samples_of;  // each data file's header read once
  const auto samples = [&](const std::string& path) {
    const auto found = samples_of.find(path);
    return found != samples_of.end() ? found->second : samples_of[path] = beton_samples(path);
  };
  for (std::size_t i = 0; i < recipes.size(); ++i) {
    const DataSamples data{samples(recipes[i].data.train), samples(recipes[i].data.val)};
    memory.push_back(estimate_point_memory(recipes[i], on_gpu, data));
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return train::shares_batches(recipes[g.front()], recipes[i], grid.spec.share_seeds);
    });
    if (group == groups.end()) {
      groups.push_back({i});
    } else {
      group->push_back(i);
    }
  }
  const int asked = resolve_grid_parallel(grid, grid.base);
  const double known = static_cast<double>(available_memory_bytes());
  // Memory not known: the cores alone limit the points at once.
  const double available = known > 0 ? known : std::numeric_limits<double>::infinity();
  GridMemoryPlan plan =
      plan_grid_memory(grid.spec.placement, asked, memory, groups, available, available_cores());
  if (memory.empty()) return plan;
  // A processes grid's default, one process per core (resolve_grid_parallel), said as such.
  if (grid.spec.placement == "processes" && grid.spec.parallel <= 0 && grid.gpus.empty()) {
    plan.by_cores = plan.units > plan.cores;
  }
  if (!plan.fits) {
    const PointMemory& one = *std::max_element(
        memory.begin(), memory.end(), [](const PointMemory& a, const PointMemory& b) {
          return a.host_model_bytes() + a.loader < b.host_model_bytes() + b.loader;
        });
    const std::string estimate =
        "the grid needs about " + byte_size_text(plan.needed) + " of memory even one point at a " +
        "time (model " + byte_size_text(one.on_gpu ? 0 : one.model) + ", activations " +
        byte_size_text(one.on_gpu ? 0 : one.activations) + ", loader " +
        byte_size_text(one.loader) + ", set-up " + byte_size_text(one.setup) + ", process " +
        byte_size_text(kProcessBytes) + "; docs/recipes.md, \"Memory\"), more than the " +
        byte_size_text(available) + " available";
    if (!unchecked) {
      throw UsageError(estimate +
                       "; lower training.batch_size, the resolution or data.batches_ahead, or "
                       "pass --no-memory-check to start anyway");
    }
    std::fprintf(stderr, "ffcv run: warning: %s; starting anyway (--no-memory-check)\n",
                 estimate.c_str());
  }
  if (unchecked) {
    // As asked, but for the cores: no more at once than the memory check aside would start.
    plan.at_once = plan.asked;
    plan.models_per_group = 0;
    return plan;
  }
  if (!grid.quiet) {
    std::printf("%s\n", grid_plan_line(plan, grid.spec.placement).c_str());
    std::fflush(stdout);
  }
  return plan;
}

// --print-recipe: every point's resolved recipe, each under a line that names the point.
void print_point_recipes(const GridInvocation& grid) {
  for (const train::GridPoint& point : train::grid_points(grid.spec)) {
    std::printf("# point %zu: %s\n", point.index, redact_url_passwords(point.label).c_str());
    const train::Recipe recipe = train::load_recipe(grid.recipe_path, point_overrides(grid, point));
    std::fputs(train::recipe_to_toml(recipe).c_str(), stdout);
  }
}

// "lr.lr (2 values)" for each axis of `axes`, joined with ", ".
std::string axes_text(const std::vector<train::GridAxis>& axes) {
  std::string text;
  for (const train::GridAxis& axis : axes) {
    text += (text.empty() ? "" : ", ") + axis.key + " (" + std::to_string(axis.values.size()) +
            (axis.values.size() == 1 ? " value)" : " values)");
  }
  return text;
}

// The note that --grid adds to the recipe's own grid (a new axis multiplies the points) or
// replaces one of its axes, or "" when the recipe has no axes of its own or no --grid was given.
std::string added_axes_note(const GridInvocation& grid) {
  if (grid.grid_axes.empty()) return "";
  // The recipe's own axes, with the placement in effect (a recipe's share_seeds holds only with
  // the command line's --placement shared).
  const train::GridSpec own = train::load_grid(grid.recipe_path, {}, grid.spec.placement);
  if (own.axes.empty()) return "";
  std::vector<train::GridAxis> added, replaced;
  for (const train::GridAxis& axis : grid.spec.axes) {
    const bool from_command_line =
        std::any_of(grid.grid_axes.begin(), grid.grid_axes.end(), [&](const std::string& text) {
          return text.compare(0, axis.key.size() + 1, axis.key + "=") == 0;
        });
    if (!from_command_line) continue;
    const bool the_recipes =
        std::any_of(own.axes.begin(), own.axes.end(),
                    [&](const train::GridAxis& mine) { return mine.key == axis.key; });
    (the_recipes ? replaced : added).push_back(axis);
  }
  std::string note = "the recipe's own [grid] sweeps " + axes_text(own.axes) + "; --grid ";
  if (!added.empty()) note += "adds " + axes_text(added);
  if (!added.empty() && !replaced.empty()) note += " and ";
  if (!replaced.empty()) note += "replaces the values of " + axes_text(replaced);
  return note + ": " + std::to_string(train::grid_point_count(grid.spec)) +
         " points in all (docs/recipes.md, \"Grids\")";
}

// The one point to train: --point, else a cluster job array's task (SLURM_ARRAY_TASK_ID); none
// for the whole grid.
std::optional<std::size_t> single_point(const Arguments& args, const train::GridSpec& spec) {
  std::optional<std::size_t> point;
  if (args.has("point")) {
    point = static_cast<std::size_t>(args.get_int("point"));
  } else if (const char* task = std::getenv("SLURM_ARRAY_TASK_ID"); task != nullptr) {
    point = array_task_point(task, kMaxGridPoints);
  }
  const std::size_t point_count = train::grid_point_count(spec);
  if (point && *point >= point_count) {
    throw UsageError("point " + std::to_string(*point) + " is not in the grid: it has " +
                     std::to_string(point_count) + " points, 0 to " +
                     std::to_string(point_count - 1));
  }
  return point;
}

// Trains every point of the grid: what every point depends on is checked once before any work,
// and the grid's memory estimate sets how many run at once.
int run_whole_grid(GridInvocation& grid, const Arguments& args, bool fresh,
                   const std::string& stop_after) {
  grid.points = train::grid_points(grid.spec);
  const std::vector<train::Recipe> recipes = load_point_recipes(grid, grid.points);
  check_data_paths(recipes, grid.recipe_path);
  grid.gpus = grid_gpus(grid.base);
  const GridMemoryPlan plan = grid_memory_plan(grid, recipes, args.get_flag("no-memory-check"));
  // Held until the grid ends: no second command runs this grid meanwhile.
  const train::FolderLock grid_lock =
      ready_grid_folder(grid, GridFolderUse::kWholeGrid, fresh, recipes);
  grid.spec.parallel = plan.at_once;
  if (grid.spec.placement == "threads" || grid.spec.placement == "shared") {
    return run_grid_together(grid, stop_after, plan.models_per_group);
  }
  grid.stop_after_steps = stop_after;
  // Remote data is pinned here, so that every point's process reads this version of it.
  for (const std::string& data : {grid.base.data.train, grid.base.data.val}) {
    pin_remote_version(data);
  }
  return run_grid_command(grid, this_program());
}

}  // namespace

int run_grid_recipe(const Arguments& args, const std::vector<std::string>& argv,
                    const train::GridSpec& spec) {
  GridInvocation grid;
  grid.recipe_path = args.get("RECIPE");
  grid.overrides = args.get_all("set");
  grid.grid_axes = args.get_all("grid");
  grid.spec = spec;
  grid.quiet = args.get_flag("quiet");
  grid.command_line = redact_url_passwords(joined(argv));  // shown in the grid's tables
  check_set_not_swept(grid.overrides, spec);
  try {
    grid.base = train::load_recipe(grid.recipe_path, grid.overrides);
  } catch (const train::OverrideError& error) {
    throw UsageError(error.what());  // a --set the recipe refuses: a bad command line
  }
  // Said once, by the command the user typed: not by each point's process (--point).
  const bool point_process = args.has("point") || std::getenv("SLURM_ARRAY_TASK_ID") != nullptr;
  if (!grid.quiet && !point_process) {
    if (const std::string note = added_axes_note(grid); !note.empty()) {
      std::fprintf(stderr, "ffcv run: note: %s\n", note.c_str());
    }
  }
  if (args.has("nproc")) throw UsageError("--nproc: a grid trains each point as one process");
  if (args.get_flag("print-recipe")) {
    print_point_recipes(grid);
    return 0;
  }

  const std::optional<std::size_t> point = single_point(args, spec);
  if ((point || args.get_flag("gather")) && !args.has("output-dir")) {
    throw UsageError(std::string(point ? "a single point" : "--gather") +
                     " needs the grid's folder: give --output-dir GRID_DIR");
  }
  if (args.has("output-dir")) {
    grid.grid_dir = args.get("output-dir");
  } else {
    grid.grid_dir = grid.base.logging.folder + "/" + grid.base.name + "-grid-" + run_stamp();
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
    grid.points = train::grid_points(spec);
    ready_grid_folder(grid, GridFolderUse::kGather, false, load_point_recipes(grid, grid.points));
    return gather_grid_command(grid);
  }
  const std::string stop_after =
      args.has("stop-after-steps") ? std::to_string(args.get_int("stop-after-steps")) : "";
  if (point) {
    // This point alone: the grid's other points are neither made nor checked here.
    const train::GridPoint one = train::grid_point(spec, *point);
    ready_point_folder(grid, one, load_point_recipes(grid, {one}));
    return run_grid_point(grid, one, stop_after);
  }
  return run_whole_grid(grid, args, fresh, stop_after);
}

}  // namespace ffcv::tools
