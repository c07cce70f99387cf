// The training run a recipe describes: ResNet, SGD with the recipe's schedules, fed by the
// loader, evaluated with test-time augmentation, checkpointed, logged.
//
// Per epoch: the train crop takes the resolution of the progressive-resizing schedule; every
// iteration sets the learning rate of the per-iteration schedule, runs forward and backward
// (autocast and loss scaling for fp16, autocast alone for bf16), averages gradients over ranks
// and steps. Rank 0 writes the run folder:
//   recipe.toml     the resolved recipe (every key, overrides applied)
//   log.jsonl       one JSON object per epoch: loss, accuracy, LR, resolution, images/s, time
//                   waiting for the loader vs in the training step, validation figures
//   checkpoint.pt   the latest checkpoint (see checkpoint.hpp)
//   summary.json    the final figures, written when the run ends
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "ffcv/train/recipe.hpp"

namespace ffcv::train {

struct RunOptions {
  std::string run_dir;    // where rank 0 writes; created if missing
  bool progress = false;  // draw a progress bar (rank 0 only)
  bool quiet = false;     // print nothing but errors
  // Set (e.g. by a signal handler) to stop after the current batch, saving a checkpoint from
  // which the run resumes exactly. May be null.
  const std::atomic<bool>* stop = nullptr;
  // Stops as if `stop` were set after this many iterations of the run (0: never); for tests
  // of interruption and resume.
  std::uint64_t stop_after_steps = 0;
  // Console lines start with "[label] " when not empty (several runs printing at once).
  std::string label;
  // Held around every forward pass when not null: runs that share a GPU from several threads
  // can take turns there (the tuning guide's note on cuDNN's BatchNorm). May be null.
  std::mutex* forward_lock = nullptr;
};

struct RunSummary {
  std::string run_dir;
  bool finished = false;  // false when stopped early (a checkpoint was saved)
  std::uint64_t epochs_done = 0;
  std::uint64_t steps = 0;
  double val_top1 = 0, val_top5 = 0, val_loss = 0;
  // The whole run's figures, across the sessions of a run stopped and resumed (the checkpoint
  // carries them): the mean loss over every batch of the last finished epoch, and the time in
  // training epochs (evaluation excluded) with the images trained in it.
  double train_loss = 0;
  double train_seconds = 0;
  double images_per_second = 0;
  bool replicas_identical = true;  // parameters equal on every rank at the end
  double parameter_checksum = 0;   // sum of all parameters, for comparing runs
  std::string weights_digest;      // hash of every parameter's and buffer's bytes: bitwise equal
};

// Runs (or resumes, with checkpoint.resume) the recipe. Distributed when the environment says
// so (see distributed.hpp). Throws ConfigError / FormatError for bad recipes and datasets.
// Throws Error when the mean training loss of an epoch is not finite (the run diverged).
RunSummary run_training(const Recipe& recipe, const RunOptions& options);

// The CUDA devices this process sees (0 without CUDA).
int cuda_device_count();

}  // namespace ffcv::train
