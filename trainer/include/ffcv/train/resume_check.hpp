// Resuming a run: only the recipe that saved a checkpoint may continue from it.
//
// checkpoint.resume continues the run that saved the checkpoint where it stopped: at its epoch
// and batch, with its learning-rate schedule, data order and augmentations. A recipe that differs
// in anything the training depends on would not continue that run but silently make another (a
// copied command without the first one's --set overrides would go on with another data file and
// schedule). The checkpoint holds the resolved recipe that saved it (checkpoint.hpp), and a
// resume whose recipe differs from it is refused, naming every key that differs.
//
// Keys that only decide where the logs go or how fast the same batches arrive may differ:
// logging.*, checkpoint.*, the loader's threads and buffers (data.num_workers, batches_ahead,
// cache_readers), its simulated storage (storage_latency_ms, storage_bandwidth_mbs), its HTTP
// time limits and attempts (http_*), training.threads, and the rendezvous of the ranks
// (dist.address, dist.port, dist.backend).
//
// No LibTorch here: checkpoint_recipe.hpp reads the recipe out of a checkpoint.
#pragma once

#include <string>
#include <vector>

namespace ffcv::train {

struct ResumeDifference {
  std::string key;    // "training.epochs"
  std::string saved;  // its value in the checkpoint's recipe, as TOML writes it
  std::string now;    // its value in the recipe that resumes
};

// The keys (outside those that may differ, above) whose values differ between two resolved
// recipes (recipe_to_toml's text), in the order of `now_toml`. A key missing from either side (a
// key added by a newer version) is not compared. Throws ConfigError when `now_toml` is not TOML;
// a `saved_toml` that is not TOML (or "") compares equal.
std::vector<ResumeDifference> resume_differences(const std::string& saved_toml,
                                                 const std::string& now_toml);

// The command that resumes the run that saved `checkpoint`, with the recipe the run wrote beside
// it (its resolved recipe: every --set of the first command applied, dist.world_size its ranks):
// "ffcv run DIR/recipe.toml --output-dir DIR --set checkpoint.resume=CHECKPOINT", each word quoted
// for a shell where it needs it.
std::string resume_command(const std::string& checkpoint);

// Throws ConfigError when `now_toml` differs from `saved_toml`, the recipe that saved
// `checkpoint`: one line naming the checkpoint, each differing key with both values, and the
// command that resumes the run with its own recipe (the recipe.toml beside the checkpoint, when
// there is one).
void check_resume_recipe(const std::string& checkpoint, const std::string& saved_toml,
                         const std::string& now_toml);

}  // namespace ffcv::train
