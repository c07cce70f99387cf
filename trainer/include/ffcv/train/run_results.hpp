// What a run folder says about its run, read back from the files the trainer writes into it
// (trainer.hpp: recipe.toml, log.jsonl, checkpoint.pt, summary.json) and from error.txt, which
// the command that ran it writes when the run ends in an error.
//
// Used by whatever gathers the results of many runs (grids, training sweeps) from their folders,
// so that a table can be rebuilt at any time from the folders alone, whoever ran them and
// wherever (a cluster's job array writes the same folders).
#pragma once

#include <cstdint>
#include <string>

namespace ffcv::train {

enum class RunState {
  kNone,      // no run has started in the folder
  kStarted,   // started, nothing saved yet (running, or killed before its first checkpoint)
  kStopped,   // stopped with a checkpoint: resumable
  kFinished,  // trained every epoch; summary.json has the final figures
  kFailed,    // ended in an error (error.txt)
};

const char* run_state_name(RunState state);  // "none", "started", "stopped", "finished", "failed"

struct RunResults {
  RunState state = RunState::kNone;
  std::string error;  // kFailed: the error's one-line message
  std::uint64_t epochs_done = 0;
  double val_top1 = 0, val_top5 = 0, val_loss = 0, train_loss = 0;  // summary.json's
  double train_seconds = 0;
  double images_per_second = 0;
  double loader_wait_share = 0;     // the epochs' loader wait / their wall time (log.jsonl)
  std::uint64_t epochs_logged = 0;  // epoch records in log.jsonl
  double parameter_checksum = 0;
};

// Reads `dir`. A folder that does not exist reads as kNone.
RunResults read_run_results(const std::string& dir);

// Records that the run in `dir` ended with `message` (error.txt, replaced atomically).
void write_run_error(const std::string& dir, const std::string& message);

// Removes an earlier error record before the run in `dir` resumes.
void clear_run_error(const std::string& dir);

// Removes what an earlier start left in `dir` (recipe.toml, log.jsonl, checkpoint.pt,
// summary.json, error.txt) before the run starts again from nothing, so that its log and
// checkpoint are the new run's alone.
void clear_run_files(const std::string& dir);

}  // namespace ffcv::train
