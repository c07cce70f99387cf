// How much memory a grid needs, estimated from its recipes before any work, and how many of its
// points may therefore run at once.
//
// A grid whose points all start together can need many times one run's memory: a 10,000-point
// `shared` grid builds 10,000 models. The estimate (docs/recipes.md, "Memory") is, per point:
//
//   model        16 bytes x parameters: fp32 weights, gradients, SGD momentum, and one more copy
//                for evaluation and checkpointing (parameters counted from model.arch, width,
//                stem and num_classes, as resnet.hpp builds them)
//   activations  training: batch_size x 3 x (the elements of every convolution's output per
//                image at resolution.max_res) x 4 bytes (2 with fp16/bf16), plus the input; the
//                validation forward pass at its own batch and resolution when that is larger
//   loader       (batches_ahead + 2) slots of a batch of uint8 RGB images at max_res, for the
//                training and the validation loader, plus cache_budget_mib per loader when the
//                process cache reads (data.os_cache = false), plus the loaders' tables
//                (kTableBytesPerSample per sample of data.train and data.val: the allocation
//                table, each sample's page, the epoch's order)
//   set-up       kPointSetUpBytes: what a point holds beyond the above from its set-up on (its
//                threads' stacks and allocator arenas, LibTorch's per-thread state), also on
//                the GPU
//   process      kProcessBytes per process (LibTorch and the loader's threads at rest)
//
// On CUDA the model and activations live on the GPU and are left out of the host's estimate.
// The estimate is compared with a share, kGridMemoryFraction, of the memory available to this
// process (available_memory_bytes, ffcv/util/available_memory.hpp: /proc/meminfo's
// MemAvailable, or what the cgroup still allows when less): the rest stays with the page cache
// the points read their data through, and with the rest of the machine. And the points a grid
// runs at once by default are at most one per core: more would only take turns on the cores
// while each holds its memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/train/recipe.hpp"

namespace ffcv::tools {

// The share of the available memory a grid plans to fill with points running at once.
inline constexpr double kGridMemoryFraction = 0.75;

// A training process at rest, before its model and loaders: LibTorch's libraries and allocator
// arenas, the run's threads.
inline constexpr double kProcessBytes = 400.0 * (1 << 20);

// What one point holds beyond its model, activations, batches and tables: its threads' stacks
// and allocator arenas, LibTorch's per-thread state, taken from its set-up on. Measured on
// `threads` grids of Fashion-MNIST ResNet-18s (width 1/8 to 1/2, 32-64 px, 60,000 + 10,000
// samples): before its first batch a point held 4-12 MiB (tables, model, threads, the first
// slots), and training, 20-70 MiB more than the estimate's other parts (docs/recipes.md,
// "Memory").
inline constexpr double kPointSetUpBytes = 48.0 * (1 << 20);

// The loaders' tables per sample of a data file, held by each point from before its first
// batch: the allocation table entry (24 bytes a field), the sample's page, its place in the
// epoch's order and the order's working copies. Measured: about 140 bytes a sample of
// Fashion-MNIST (an image and a label) per point, threads and all.
inline constexpr double kTableBytesPerSample = 128;

// The trainable parameters of the ResNet `model` describes (weights, BatchNorm scale and shift,
// the classifier's weights and bias), as resnet.hpp builds it.
std::uint64_t resnet_parameter_count(const train::ModelConfig& model);

// Bytes, in double: batch sizes and resolutions of a bad recipe may overflow 64 bits.
struct PointMemory {
  double model = 0;        // weights, gradients, optimizer state, one spare copy
  double activations = 0;  // what one training step or evaluation keeps alive
  double loader = 0;       // batch slots, tables (and the process cache) of its two loaders
  double setup = kPointSetUpBytes;  // held from before the first batch, on the host
  bool on_gpu = false;              // model and activations are on the GPU: not host memory

  // Host bytes each model of the point adds: its model and activations (0 on the GPU) and its
  // set-up.
  double host_model_bytes() const { return (on_gpu ? 0 : model + activations) + setup; }
};

// The samples of the recipe's data files (0 where not known: a URL), for the loaders' tables.
struct DataSamples {
  std::uint64_t train = 0, val = 0;
};

PointMemory estimate_point_memory(const train::Recipe& recipe, bool on_gpu,
                                  const DataSamples& samples = {});

// How a grid runs, for the estimate.
struct GridMemoryPlan {
  int at_once = 1;           // processes / threads / shared groups at once (never 0)
  int models_per_group = 0;  // shared: models built together in one group (0: no limit)
  double needed = 0;         // estimated peak bytes as planned
  int asked = 1;             // units at once asked for (or one per core), before the memory
  double requested = 0;      // estimated peak bytes with `asked` at once
  double available = 0;      // the memory available (MemAvailable or the cgroup's)
  double budget = 0;         // kGridMemoryFraction of it: what the plan fills at most
  int units = 0;             // processes / threads / shared groups the grid has
  int cores = 0;
  bool by_cores = false;   // fewer at once than units because of the cores
  bool by_memory = false;  // fewer at once (or models per group) because of the budget
  bool fits = true;        // false: not even one point at a time fits the memory available
};

// The plan for `placement` (sequential | processes | threads | shared) with `at_once` processes,
// threads or shared groups asked for at once (0: the default, one per core), `groups` the
// shared placement's groups of points that read the same batches (indices into `points`; other
// placements: ignored, each point is a unit of its own), on a machine with `available` bytes of
// memory available and `cores` cores for the grid. Lowers the number at once, and then splits
// large shared groups into turns, until the estimate fits the budget (kGridMemoryFraction of
// `available`); one unit at a time always runs when it fits `available` itself, and `fits` is
// false when it does not.
GridMemoryPlan plan_grid_memory(const std::string& placement, int at_once,
                                const std::vector<PointMemory>& points,
                                const std::vector<std::vector<std::size_t>>& groups,
                                double available, int cores);

// The plan as the line a grid prints before it starts: "grid: plan: N of M at once (...)",
// naming what limited it and the memory it plans for against the budget and what is available.
std::string grid_plan_line(const GridMemoryPlan& plan, const std::string& placement);

}  // namespace ffcv::tools
