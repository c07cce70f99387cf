// Checkpoints: everything a run needs to continue exactly where it stopped.
//
// One file holds the model's parameters and buffers, the optimizer's state (momentum buffers),
// the loss scaler, the position (epoch, batches done in it, optimizer steps), the run's totals
// so far (RunTotals), torch's CPU random state and the resolved recipe text. The loader needs
// nothing else: its order and every random decision are keyed by (seed, epoch, sample), so
// restarting the epoch at `batches_done` yields exactly the batches the interrupted run would have
// seen. Files are written to a temporary name and renamed, so a crash while saving leaves the
// previous checkpoint intact.
#pragma once

#include <cstdint>
#include <string>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace ffcv::train {

class LossScaler;

struct TrainPosition {
  std::uint64_t epoch = 0;         // the epoch to run next (or to finish)
  std::uint64_t batches_done = 0;  // batches of `epoch` already trained
  std::uint64_t steps = 0;         // iterations trained in the whole run
};

// What the run has measured so far, carried from session to session so that the summary of a
// run stopped and resumed is the whole run's, as if it had never stopped.
struct RunTotals {
  double train_seconds = 0;        // training time, every session's
  std::uint64_t train_images = 0;  // images trained, every session's
  double last_epoch_loss = 0;      // the mean training loss of the last finished epoch
  // The epoch the run stopped in, so far (summed over ranks): the per-batch mean losses, the
  // correct predictions, and the batches they come from.
  double stopped_epoch_loss_sum = 0;
  double stopped_epoch_correct = 0;
  std::uint64_t stopped_epoch_batches = 0;
};

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const LossScaler& scaler,
                     const TrainPosition& position, const std::string& recipe_toml,
                     const RunTotals& totals = {});

// Restores into an identically built model and optimizer, and into `totals` when given (zeros
// for a checkpoint saved without them). Throws ConfigError naming the file when it cannot be
// read or its parameters do not match the model (names or shapes).
TrainPosition load_checkpoint(const std::string& path, torch::nn::Module& model,
                              torch::optim::Optimizer& optimizer, LossScaler& scaler,
                              RunTotals* totals = nullptr);

}  // namespace ffcv::train
