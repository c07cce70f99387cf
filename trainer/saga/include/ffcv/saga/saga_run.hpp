// run_saga: a whole SAGA recipe, from the .beton to the run folder.
//
// One pass over the training rows measures the standardization and λ_max (and times streaming
// the features once: the bound a solver epoch is compared with), then the recipe's path runs
// (saga_path.hpp), and for a lasso path with validation rows the refit on training + validation
// rows at each column's selected λ. The run folder gets:
//   recipe.toml                  the resolved recipe
//   path.csv                     target,lambda,lr,train_loss,val_loss,nnz,epochs,seconds,
//                                converged,phase,val_se,penalty: every point of the path
//                                (phase: path | refit; the losses without the penalty)
//   weights.npy, bias.npy        the selected model, float32 [d, K] and [K], for standardized
//                                features x̃ = (x − feature_mean) / feature_std (0 where std is 0)
//   feature_mean.npy, feature_std.npy   float32 [d], of the rows the final model was fit on
//   lambda.npy                   float64 [K], each column's selected λ
//   path_weights.npy, path_bias.npy   with saga.path_weights: the model at every path point,
//                                elastic_net [points, d, K] and [points, K], lasso_path one row
//                                per path.csv row of phase "path": [points, d] and [points]
//   summary.json                 sizes, timings (stream, per epoch, to the selected model,
//                                loader wait), the selection rule, every column's selected λ,
//                                the validation loss and nonzeros
//
// Before the first pass the run's memory is estimated and checked (saga_memory.hpp); a .beton
// with a --pack-bits sidecar has its features unpacked (resolve_packed_features).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/saga/saga_recipe.hpp"

namespace ffcv::saga {

struct SagaRunOptions {
  std::string run_dir;                      // must exist
  bool quiet = false;                       // no progress lines on stdout
  const std::atomic<bool>* stop = nullptr;  // set (Ctrl-C): the solve ends with SolveStopped
};

struct SagaRunSummary {
  std::string objective, family, loader, device;
  std::uint64_t train_rows = 0, val_rows = 0, features = 0, outputs = 0;
  std::uint64_t epochs = 0;              // solver epochs, refit included
  double seconds = 0;                    // the whole run
  double stream_seconds_per_epoch = 0;   // one pass over the training rows, no solver work
  double seconds_per_epoch = 0;          // one solver epoch (path phase)
  double time_to_selected_seconds = 0;   // from the start to the selected (refit) model
  double loader_wait_seconds = 0;        // the solver waiting for batches, in all
  std::string selection;                 // saga.selection
  std::vector<double> selected_lambdas;  // each output column's selected λ
  double selected_lambda = 0;  // the one λ when every column has it (elastic_net), else NaN
  std::string selection_text;  // "selected λ 0.012 (val_loss)", or the per-target range
  double val_loss = 0;         // mean over columns (NaN without validation rows)
  std::uint64_t nnz = 0;       // nonzero weights of the selected model
  std::uint64_t path_points = 0, unfinished = 0;
};

// Throws ConfigError for a recipe that does not fit its data (fields, row counts, device),
// SolveStopped when `stop` was set, std::runtime_error when the solve diverges.
SagaRunSummary run_saga(const SagaRecipe& recipe, const SagaRunOptions& options);

// The summary as the JSON object written to summary.json.
std::string summary_json(const SagaRunSummary& summary);

}  // namespace ffcv::saga
