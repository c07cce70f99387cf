// A grid of training runs: one recipe, several values for some of its keys, every combination
// (or a listed set of points) trained as a run of its own.
//
// In the recipe file, beside the recipe's own sections:
//
//   [grid]
//   placement = "shared"     # how the points run (below)
//   parallel = 0             # processes / threads / groups at once; 0: processes: one per GPU
//                            # on CUDA, else one per core; threads and shared: one per core
//                            # (the memory permitting: tools/grid/grid_memory.hpp)
//   share_gpus = false       # processes: let more processes than GPUs share them
//   forward_lock = false     # threads, shared: forward passes on a shared GPU take turns
//   share_seeds = false      # shared: points of different data.seed share one decode, each
//                            # with crops of its own (train_together.hpp)
//   lr.lr = [0.25, 0.5]      # an axis: a recipe key (section.key) and its values
//   data.seed = [0, 1]       # every combination of the axes' values is a point, the first axis
//                            # varying slowest: here 4 points
//
// or, instead of axes, the points themselves:
//
//   points = [{ lr.lr = 0.25, data.seed = 0 }, { lr.lr = 0.5, data.seed = 7 }]
//
// Placements (`--placement` on the command line):
//   sequential  one point after another, each a process of its own with every core
//   processes   `parallel` points at once, each a process pinned to its own share of the cores
//               and, on CUDA, its own GPU: the paper's 8 models per node
//   threads     one process, a thread per point with its own loader (and CUDA stream), all on
//               one GPU: FFCV's several models per GPU
//   shared      one process; points that read the same batches share one loader, which decodes
//               each batch once for all of them (train_together.hpp)
//
// On the command line `--grid lr.lr=0.25,0.5` adds an axis (or replaces the file's axis of that
// key; the same key in two --grid options is refused rather than one of them dropped); values are
// split at commas outside brackets and quotes (`--grid augment.scale=[0.08,1],[0.35,1]`). Each
// value is written as `--set` takes it: a point runs the recipe with its values applied after the
// command line's `--set` overrides.
//
// Checked when the grid is read, before any work: the settings, that every key is a recipe key
// (with the nearest one suggested), that keys which belong to the grid's own machinery are not
// swept (data-parallel ranks, checkpoint.resume, the logging folder), and that listed points
// and axes are not mixed. A value that the recipe refuses is not an error of the grid: that point
// fails, is reported in the table, and the others go on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ffcv/util/errors.hpp"

namespace ffcv::train {

// A bad grid value given on the command line (--grid, --placement) rather than in the recipe
// file: the message names the option, and the CLI answers it as a bad command line (exit 2).
class GridOptionError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

struct GridAxis {
  std::string key;                  // "section.key"
  std::vector<std::string> values;  // value texts, as --set takes them
};

struct GridSpec {
  std::string placement = "sequential";  // sequential | processes | threads | shared
  int parallel = 0;                      // points at once; 0: the placement's default
  bool share_gpus = false;
  bool forward_lock = false;
  bool share_seeds = false;
  std::vector<GridAxis> axes;
  // Listed points: each a list of (key, value text); used instead of the axes' product.
  std::vector<std::vector<std::pair<std::string, std::string>>> listed;

  bool empty() const { return axes.empty() && listed.empty(); }
};

// One point: its position in the grid and the overrides ("section.key=value") it adds.
struct GridPoint {
  std::size_t index = 0;
  std::vector<std::string> overrides;
  std::string label;   // "lr.lr=0.25 data.seed=0": for progress lines and tables
  std::string folder;  // "point-000": its run folder's name inside the grid folder
};

// The [grid] section of the recipe at `path` (an empty spec when it has none), then the
// command line's axes ("key=v1,v2,...") and settings (placement, parallel: empty / negative
// for "not given"). Throws ConfigError naming the file, or GridOptionError naming the option
// (--grid, --placement) when the command line's value is at fault.
GridSpec load_grid(const std::string& path, const std::vector<std::string>& cli_axes,
                   const std::string& cli_placement = "", int cli_parallel = -1);

// The points: the listed ones, or the product of the axes, the first axis varying slowest.
std::vector<GridPoint> grid_points(const GridSpec& spec);

// How many points grid_points(spec) has, without making them (saturating at SIZE_MAX).
std::size_t grid_point_count(const GridSpec& spec);

// Point `index` alone, equal to grid_points(spec)[index] without making the others: what one
// point's process (`--point I`, a job array's task) needs of its grid. Throws std::out_of_range
// for an index at or past grid_point_count(spec).
GridPoint grid_point(const GridSpec& spec, std::size_t index);

// The keys the points differ in, in order of first appearance (the table's columns).
std::vector<std::string> grid_keys(const GridSpec& spec);

// The placements a grid may use: sequential, processes, threads, shared.
const std::vector<std::string>& grid_placements();

// "v1,[a,b],\"c,d\"" -> {"v1", "[a,b]", "\"c,d\""}: split at commas outside brackets and quotes.
std::vector<std::string> split_grid_values(const std::string& text);

}  // namespace ffcv::train
