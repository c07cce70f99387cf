// Several training runs in one process: the `threads` and `shared` placements of a grid
// (grid.hpp), that is FFCV's several-models-per-GPU mode and CoorDL's coordinated preparation.
//
//   threads  each run on a thread of its own, with a loader of its own and, on CUDA, a stream of
//            its own: the runs of a sequential grid, at the same time.
//   shared   runs that would read the same batches (shares_batches) form a group: one loader
//            reads and decodes each batch once and every model of the group trains on it, each
//            on a thread of its own, so decoding costs one run's share whatever the group's
//            size. Groups run on threads of their own. Runs of one group that resume from different
//            places (one stopped mid-epoch, one not started) train as separate groups.
//
// In both, at most `parallel` groups / runs train at once (0: all of them), and with
// `models_per_group` a larger shared group trains in turns of that many models (each turn reads
// and decodes the batches again): what the grid's memory estimate asks of a grid too large to
// build at once (tools/grid/grid_memory.hpp). Each gets
// available_cores() / parallel loader workers and intra-op threads (a shared group's models
// divide its share among them) unless the recipe sets data.num_workers / training.threads. Every
// run ends as it would alone with the same seed and the same thread counts (bit for bit on the
// CPU): the loader's batches do not depend on who reads them, and each model's steps see the same
// inputs in the same order.
//
// A run that fails (a recipe that does not fit its data, a diverged loss) fails alone: its
// outcome holds the error and the other runs go on. A failure of a group's loader (a damaged
// file) fails the runs of that group only.
//
// Seeds in `shared` (share_seeds): runs that differ only in data.seed besides what does not
// shape batches join one group too. Its loader keeps the order of the group's first run's seed
// and decodes each image once into one random-resized crop per distinct seed (the multi-view
// decoder, random_resized_crops); each run trains on its seed's view, from initial weights of
// its own seed. Such runs then differ from their lone runs in their order and crops: one decode
// buys K crops, not K identical runs. Views take no augment.operations and no mixup.
//
// Stopping (RunOptions::stop): the runs of a group stop after the same batch, and no waiting
// run starts (its outcome says not_started). Resumed, a group trains together again; a
// share_seeds group whose membership changed meanwhile (some points finished or failed) numbers
// its views anew, so its runs do not continue with the crops they had.
//
// Runs share a GPU (CUDA device 0 of those visible): each thread (a run, or a shared group)
// launches on a stream of its own; the models of one group launch on the group's stream, so
// their threads overlap host work, not kernels. `forward_lock` makes forward passes take
// turns, the tuning guide's advice when cuDNN's BatchNorm misbehaves under concurrency. cuDNN's
// flags (training.cudnn_benchmark, training.deterministic) are the process's: the grid refuses
// points that differ in them.
#pragma once

#include <torch/types.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "ffcv/train/recipe.hpp"
#include "ffcv/train/trainer.hpp"

namespace ffcv::train {

class ModelRun;
class TrainData;

enum class Together { kThreads, kShared };

struct TogetherRun {
  Recipe recipe;
  RunOptions options;
};

struct TogetherOutcome {
  bool not_started = false;  // a stop was asked before its turn came: nothing was done
  bool ok = false;           // false (and started): `error` says why the run did not end
  RunSummary summary;
  std::string error;
};

struct TogetherOptions {
  Together how = Together::kShared;
  int parallel = 0;           // groups / runs training at once; 0: all
  bool forward_lock = false;  // forward passes take turns
  bool share_seeds = false;   // shared: runs of different seeds share one decode (views)
  int models_per_group = 0;   // shared: a larger group trains in turns of this many; 0: whole
};

// Whether runs of `a` and `b` read the same batches: the same data settings (loader workers
// aside, and the seed with `ignore_seed`), augmentations, resolution schedule, validation, batch
// size, epochs, device, precision and memory layout.
bool shares_batches(const Recipe& a, const Recipe& b, bool ignore_seed = false);

// Trains `runs` as `options` say; the outcomes are in the order of `runs`.
std::vector<TogetherOutcome> train_together(const std::vector<TogetherRun>& runs,
                                            const TogetherOptions& options);

// What to do with a run that threw: called with the run and its error, after which the run
// takes no further part. Empty: the error propagates.
using RunFailed = std::function<void(ModelRun&, std::exception_ptr)>;

// Trains `runs` from `data` until each is done or stopped: every batch of every epoch goes to
// every run still training, in order. The runs must share batches and be at the same place
// (next_epoch, first_batch). With `views` (one per run), `data` holds several views of each
// image and run k trains on view views[k]. With `threads_per_model` > 0 and several runs, each
// run trains on
// a thread of its own with that many intra-op threads, all on the same batch at once (on CUDA
// they launch on the calling thread's stream); evaluations take turns, since they share the
// validation loader. Otherwise everything runs on the calling thread. An error of the loader
// itself propagates.
void train_on_shared_batches(TrainData& data, const std::vector<ModelRun*>& runs, at::Device device,
                             const RunFailed& failed = {}, int threads_per_model = 0,
                             const std::vector<int>& views = {});

}  // namespace ffcv::train
