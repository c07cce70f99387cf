// Checkpoints: everything a run needs to continue exactly where it stopped.
//
// One file holds the model's parameters and buffers, the optimizer's state (momentum buffers),
// the loss scaler, the position (epoch, batches done in it, optimizer steps), torch's CPU random
// state and the resolved recipe text. The loader needs nothing else: its order and every random
// decision are keyed by (seed, epoch, sample), so restarting the epoch at `batches_done` yields
// exactly the batches the interrupted run would have seen. Files are written to a temporary
// name and renamed, so a crash while saving leaves the previous checkpoint intact.
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

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const LossScaler& scaler,
                     const TrainPosition& position, const std::string& recipe_toml);

// Restores into an identically built model and optimizer. Throws ConfigError naming the file
// when it cannot be read or its parameters do not match the model (names or shapes).
TrainPosition load_checkpoint(const std::string& path, torch::nn::Module& model,
                              torch::optim::Optimizer& optimizer, LossScaler& scaler);

}  // namespace ffcv::train
