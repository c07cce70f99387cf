// What a SAGA run will hold in memory, estimated from its sizes before anything large is
// allocated, so that a run that cannot fit is refused up front with the estimate, what it is
// made of and the settings that shrink it, rather than swapping for hours or being killed.
//
// The parts (d features, K outputs, n table rows, B rows a batch, P path points; 4 bytes a
// float32, 8 a float64):
//   model and SAGA averages   W and Ḡ_W: 2·d·K·4, the selected model and its copies: 2·d·K·4
//   SAGA table                n·K·4 (on the device, or host memory with saga.table = "host")
//   step work                 a step's d×K temporaries (about 6·d·K·4) and the float32 batch
//                             with its unpacked copy, B·d·(4 + 4)
//   loader batches            the loader's ring: (batches_ahead + 2)·B·(stored row bytes),
//                             float32 rows on the CPU (the workers widen them)
//   statistics pass           float64 batch and sums: 3·B·d·8 + d·K·8 + 6·d·8
//   path weights              saga.path_weights, or the one_se rule, keeps every point's model:
//                             P·d·K·4 (elastic_net, P = the path's λ), (m+1)·d·K·4·2 (lasso_path,
//                             each column's m + 1 points, stacked once at the end)
// On a CUDA device the model, table (unless host), step work and batches are device memory, the
// rest host memory; only host memory is checked here (a device that runs out is named by
// torch's own out-of-memory error).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/saga/saga_recipe.hpp"

namespace ffcv::saga {

struct MemoryPart {
  std::string name;     // "path weights"
  std::string formula;  // "101 points x 5000000 features x 1 outputs x 4 bytes"
  double bytes = 0;
  bool on_device = false;  // CUDA device memory rather than host memory
  std::string shrink;      // the setting that makes it smaller; may be empty
};

struct MemorySizes {
  std::uint64_t features = 0;          // d
  std::uint64_t outputs = 0;           // K
  std::uint64_t table_rows = 0;        // rows of the SAGA table (the largest training row + 1)
  std::uint64_t stored_row_bytes = 0;  // a row's features as stored (packed bytes, float16, ...)
};

std::vector<MemoryPart> estimate_saga_memory(const SagaRecipe& recipe, const MemorySizes& sizes);

// Throws ConfigError when the host parts of `parts` exceed the limit: saga.memory_limit_gib, or
// `available` when that is 0 (a limit of 0 bytes, unknown, checks nothing). The message gives
// the estimate, each part with its formula, and the settings that shrink the largest parts or
// raise the limit.
void check_saga_memory(const std::vector<MemoryPart>& parts, const SagaSolver& solver,
                       std::uint64_t available);

}  // namespace ffcv::saga
