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
//                process cache reads (data.os_cache = false)
//   process      kProcessBytes per process (LibTorch and the loader's threads at rest)
//
// On CUDA the model and activations live on the GPU and are left out of the host's estimate.
// The estimate is compared with the memory available to this process (available_memory_bytes,
// ffcv/util/available_memory.hpp: /proc/meminfo's MemAvailable, or what the cgroup still allows
// when less).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/train/recipe.hpp"

namespace ffcv::tools {

// A training process at rest, before its model and loaders: LibTorch's libraries and allocator
// arenas, the run's threads.
inline constexpr double kProcessBytes = 400.0 * (1 << 20);

// The trainable parameters of the ResNet `model` describes (weights, BatchNorm scale and shift,
// the classifier's weights and bias), as resnet.hpp builds it.
std::uint64_t resnet_parameter_count(const train::ModelConfig& model);

// Bytes, in double: batch sizes and resolutions of a bad recipe may overflow 64 bits.
struct PointMemory {
  double model = 0;        // weights, gradients, optimizer state, one spare copy
  double activations = 0;  // what one training step or evaluation keeps alive
  double loader = 0;       // batch slots (and the process cache) of its two loaders
  bool on_gpu = false;     // model and activations are on the GPU: not host memory

  // Host bytes of the point's model and activations (0 on the GPU).
  double host_model_bytes() const { return on_gpu ? 0 : model + activations; }
};

PointMemory estimate_point_memory(const train::Recipe& recipe, bool on_gpu);

// How a grid runs, for the estimate.
struct GridMemoryPlan {
  int at_once = 1;           // processes / threads / shared groups at once (never 0)
  int models_per_group = 0;  // shared: models built together in one group (0: no limit)
  double needed = 0;         // estimated peak bytes as planned
  double requested = 0;      // estimated peak bytes as the grid asked for it
  double available = 0;
  bool fits = true;  // false: not even one point at a time fits
};

// The plan for `placement` (sequential | processes | threads | shared) with `at_once` processes,
// threads or shared groups asked for at once (0: all), `groups` the shared placement's groups of
// points that read the same batches (indices into `points`; other placements: ignored, each point
// is a unit of its own). Lowers the number at once, and then splits large shared groups, until
// the estimate fits `available`; `fits` is false when one point alone does not.
GridMemoryPlan plan_grid_memory(const std::string& placement, int at_once,
                                const std::vector<PointMemory>& points,
                                const std::vector<std::vector<std::size_t>>& groups,
                                double available);

}  // namespace ffcv::tools
