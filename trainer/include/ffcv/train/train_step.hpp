// TrainStep: the recipe's model and optimizer, and one optimisation step on a batch.
//
// Built once per run: the torchvision ResNet, BlurPool, channels_last, moved to the device and
// broadcast from rank 0; SGD with the weight-decay groups; the loss scaler for fp16. A step is
// forward under autocast, label-smoothed cross-entropy, scaled backward, gradients averaged over
// ranks, unscale and check, SGD step (skipped on overflow), scaler update. Nothing in a step
// waits for the device, not even the overflow check (sgd_update.hpp), so on CUDA the host
// launches the next step's work while the device still runs this one.
//
// The training loop (trainer.hpp) and the training benchmark (experiments/) share it, so the
// benchmark measures exactly the step the trainer runs.
#pragma once

#include <torch/types.h>

#include <memory>
#include <mutex>

#include "ffcv/train/batch_input.hpp"
#include "ffcv/train/loss_scaler.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/resnet.hpp"

namespace torch::optim {
class SGD;
}

namespace ffcv::train {

class Communicator;

struct StepResult {
  at::Tensor loss;     // scalar on the device
  at::Tensor correct;  // int64 scalar on the device: top-1 hits in the batch
};

// Sets the process's cuDNN flags from the recipe: autotuning per `cudnn_benchmark`, and with
// `deterministic` deterministic algorithms and no autotuning (autotuning times algorithms anew
// in each process, and some algorithms add in a varying order: either makes two CUDA runs, or a
// run and its resumption, differ in the last bits). Call before the first step.
void apply_cudnn_settings(const TrainingConfig& training);

// Held by whatever seeds or restores torch's global CPU generator (a model's initial weights,
// a checkpoint's random state), so that runs built on several threads at once take turns.
std::mutex& global_generator_lock();

class TrainStep {
 public:
  TrainStep(const Recipe& recipe, at::Device device, Communicator& communicator);
  ~TrainStep();

  StepResult operator()(const ModelInput& input, double learning_rate);
  // Logits (float32) of `images` in eval mode's forward, under the recipe's autocast.
  at::Tensor forward_eval(const at::Tensor& images);

  // The dtype inputs should arrive in: the autocast dtype on CUDA, float32 on the CPU.
  at::ScalarType input_dtype() const;
  // Copies rank 0's BatchNorm statistics to every rank (before forward passes).
  void broadcast_buffers();
  // Copies rank 0's parameters and buffers to every rank (after construction, after a restore).
  void broadcast_state();

  ResNet& model() { return model_; }
  torch::optim::SGD& optimizer() { return *optimizer_; }
  LossScaler& scaler() { return scaler_; }
  int blurpool_convs() const { return blurred_; }
  // Forward passes (training and evaluation) hold `lock` from now on; null: no lock.
  void set_forward_lock(std::mutex* lock) { forward_lock_ = lock; }

 private:
  const Recipe& recipe_;
  at::Device device_;
  Communicator& communicator_;
  ResNet model_{nullptr};
  int blurred_ = 0;
  std::vector<at::Tensor> parameters_, buffers_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  LossScaler scaler_;
  bool autocast_;
  at::ScalarType compute_dtype_;
  std::mutex* forward_lock_ = nullptr;
};

}  // namespace ffcv::train
