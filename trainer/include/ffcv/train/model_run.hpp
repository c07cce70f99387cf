// One model's training run, apart from what feeds it: the model and its optimizer (TrainStep),
// its place in the schedule (resumable from a checkpoint), its run folder, log and console lines,
// and its summary. `run_training` (trainer.hpp) drives one ModelRun from a loader of its own;
// `train_together` (train_together.hpp) drives several, each from its own loader on a thread, or
// several from one loader.
//
// What a driver calls, for every epoch from next_epoch() to the recipe's last while !stopped():
//   begin_epoch(epoch, batches, resolution)  batches: the epoch's batches on this rank (ranks
//                                             agree on the least; throws when there are none)
//   train(input)                              for batches first_batch() .. iterations()-1, in
//                                             order, until it returns false (a stop was asked:
//                                             RunOptions::stop or stop_after_steps)
//   end_epoch(seconds, wait, loader, val)     logs the epoch; evaluates when due; checkpoints;
//                                             after a stop, saves the checkpoint to resume from
// and then finish(), which compares the replicas and writes summary.json.
//
// Threads: a ModelRun belongs to one thread at a time; runs on different threads are independent
// (TrainStep serialises the seeding of the initial weights).
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ffcv/loader.hpp"
#include "ffcv/train/batch_input.hpp"
#include "ffcv/train/checkpoint.hpp"
#include "ffcv/train/evaluate.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/train/trainer.hpp"

namespace ffcv {
class ProgressBar;
}

namespace ffcv::train {

class Communicator;
class TrainStep;

// The device training.device names for the process with this local rank ("auto": CUDA when
// available). ConfigError for "cuda" without a CUDA device.
at::Device training_device(const std::string& setting, int local_rank);

class ModelRun {
 public:
  // Creates the run folder (options.run_dir, on the main rank) with recipe.toml, the model and
  // its optimizer, and restores checkpoint.resume when set: ConfigError, before anything is
  // written, when the checkpoint was saved by another recipe (resume_check.hpp). The main rank
  // holds the folder's lock (folder_lock.hpp) for the run's life: FolderBusyError when another
  // process trains into it. `recipe` is the resolved one: its dist.world_size is the job's.
  ModelRun(const Recipe& recipe, const RunOptions& options, at::Device device,
           Communicator& communicator);
  ~ModelRun();
  ModelRun(const ModelRun&) = delete;
  ModelRun& operator=(const ModelRun&) = delete;

  const Recipe& recipe() const { return recipe_; }
  const InputNormalizer& normalizer() const { return normalize_; }
  std::uint64_t next_epoch() const { return position_.epoch; }
  std::uint64_t first_batch() const { return position_.batches_done; }
  std::uint64_t iterations() const { return iterations_; }
  bool stopped() const { return stopped_; }
  bool done() const {
    return stopped_ || position_.epoch >= static_cast<std::uint64_t>(recipe_.training.epochs);
  }

  // The run's first lines: model, device, threads, data sizes, output folder.
  void announce(std::uint64_t train_samples, std::uint64_t val_samples, int loader_workers);

  void begin_epoch(std::uint64_t epoch, std::uint64_t batches, int resolution);
  // One training step on the epoch's next batch. False when the run must stop now (a stop was
  // asked); the driver then goes to end_epoch without training further batches.
  bool train(const ModelInput& input);
  // Whether RunOptions::stop is set now.
  bool stop_signalled() const { return options_.stop != nullptr && options_.stop->load(); }
  // From now on train() takes `stop` for RunOptions::stop's value (nullopt: reads the flag
  // itself). A driver of several runs decides once per batch, so that they stop together.
  void decide_stop(std::optional<bool> stop) { decided_stop_ = stop; }
  // `loader`: the epoch's statistics of the loader that fed the run, which `shared_by` runs
  // read (the log records its decode time and the share that falls to this run). Throws Error
  // when the epoch's mean training loss is not finite (the run diverged).
  void end_epoch(double epoch_seconds, double wait_seconds, const LoaderStats& loader,
                 std::size_t shared_by, Loader& val);
  // Records in log.jsonl that the run failed with `error` in the epoch in progress (event
  // "failed", with the epoch and the batch it failed at), before the driver reports the error.
  void record_failure(const std::string& error);
  // A run whose epochs were all trained before it started (resumed from its final checkpoint)
  // trains nothing; this validates its weights once, so that its summary holds real figures.
  // Does nothing for any other run. Every rank calls it (the evaluation is collective).
  void validate_if_already_trained(Loader& val);
  RunSummary finish();

 private:
  bool stop_requested();
  // end_epoch for an epoch stopped part-way: keeps its position and sums (`totals`, summed over
  // the ranks) in the checkpoint, to be resumed.
  void end_stopped_epoch(const at::Tensor& totals);
  // Evaluates on `val` as after epoch `epoch`; adds the figures to `record` and returns them as
  // the tail of a printed line.
  std::string validate(Loader& val, std::uint64_t epoch, JsonRecord& record);
  void say(const std::string& line) const;

  Recipe recipe_;
  RunOptions options_;
  at::Device device_;
  Communicator& comm_;
  bool main_rank_;
  bool verbose_;
  FolderLock folder_lock_;       // the run folder's, on the main rank
  std::string checkpoint_path_;  // empty without a run folder; the folder exists once set
  std::unique_ptr<TrainStep> step_;
  InputNormalizer normalize_;
  RunLog log_;
  TrainPosition position_;

  // The epoch in progress.
  std::uint64_t epoch_ = 0;
  bool in_epoch_ = false;  // from begin_epoch to the end of end_epoch
  std::uint64_t iterations_ = 0;
  std::uint64_t batch_ = 0;  // the next batch's index in the epoch
  std::uint64_t done_ = 0;   // batches trained in this epoch (this call of the epoch)
  int resolution_ = 0;
  double lr_ = 0;
  at::Tensor loss_sum_, correct_;
  std::unique_ptr<ProgressBar> bar_;

  // The whole run.
  std::optional<bool> decided_stop_;
  bool stopped_ = false;
  bool evaluated_ = false;
  EvalResult last_eval_;
  // Every session's figures (restored from the checkpoint on resume): summary.json's
  // train_loss is the last finished epoch's mean loss, train_seconds the sum over sessions.
  RunTotals totals_;
  // Batches of the epoch in progress trained before this session (counted on the main rank
  // only, so that the sum over ranks counts them once), whose sums loss_sum_ starts from.
  std::uint64_t batches_before_ = 0;
};

}  // namespace ffcv::train
