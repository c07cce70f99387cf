#include "ffcv/train/train_together.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/torch/batch_feed.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/model_run.hpp"
#include "ffcv/train/schedules.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/train/train_step.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "ffcv/util/thread_group.hpp"
#ifdef FFCV_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace ffcv::train {
namespace {

// The settings of `recipe` that shape its batches, the rest left at their defaults.
Recipe batch_settings(const Recipe& recipe, bool ignore_seed) {
  Recipe kept;
  kept.data = recipe.data;
  kept.data.num_workers = 0;
  if (ignore_seed) kept.data.seed = 0;
  kept.augment = recipe.augment;
  kept.resolution = recipe.resolution;
  kept.validation = recipe.validation;
  kept.dist = recipe.dist;
  kept.training.batch_size = recipe.training.batch_size;
  kept.training.epochs = recipe.training.epochs;
  kept.training.device = recipe.training.device;
  kept.training.precision = recipe.training.precision;
  kept.training.channels_last = recipe.training.channels_last;
  return kept;
}

std::string error_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// A failure of the loader in the trainer's numbering, the progress line's (epochs and batches
// counted from 1): "epoch 2/3, batch 6 of 8: reading its pages failed: ...". The loader's own
// message starts with its API's epoch index, from 0 ("epoch 1, batch 5: ...", "epoch 1, sample
// 40, output ...: ..."): that epoch, and a batch index right after it, are restated rather than
// repeated beside the trainer's. Sample numbers are the file's and stay as they are.
std::string loader_failure_text(const std::string& message, std::uint64_t epoch, int epochs,
                                std::uint64_t batch, std::uint64_t batches) {
  const std::string ours = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs);
  const std::string batch_text =
      "batch " + std::to_string(batch + 1) + " of " + std::to_string(batches);
  const std::string loader_epoch = "epoch " + std::to_string(epoch);
  if (message.rfind(loader_epoch, 0) != 0 || message.size() == loader_epoch.size() ||
      (message[loader_epoch.size()] != ',' && message[loader_epoch.size()] != ':')) {
    return ours + ", " + batch_text + ": " + message;
  }
  std::string rest = message.substr(loader_epoch.size());
  const std::string loader_batch = ", batch ";
  if (rest.rfind(loader_batch, 0) == 0) {
    std::size_t digits = loader_batch.size();
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits > loader_batch.size()) {
      const std::uint64_t index =
          std::stoull(rest.substr(loader_batch.size(), digits - loader_batch.size()));
      rest = ", batch " + std::to_string(index + 1) + " of " + std::to_string(batches) +
             rest.substr(digits);
    }
    return ours + rest;
  }
  return ours + ", " + batch_text + rest;
}

// A thread that runs the jobs posted to it one after another (a ThreadGroup of one).
class SerialWorker {
 public:
  // `setup` runs first on the new thread (its thread-local settings).
  explicit SerialWorker(std::function<void()> setup) {
    thread_.start(1, [this, setup = std::move(setup)](int) {
      try {
        setup();
      } catch (...) {
        // The jobs run with the thread's defaults; they report their own errors.
      }
      serve();
    });
  }
  ~SerialWorker() {
    {
      const std::lock_guard<std::mutex> hold(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Hands `job` to the thread; the previous job must have been waited for.
  void post(std::function<void()> job) {
    {
      const std::lock_guard<std::mutex> hold(mutex_);
      job_ = std::move(job);
    }
    changed_.notify_all();
  }
  // Returns when the posted job has run.
  void wait() {
    std::unique_lock<std::mutex> hold(mutex_);
    changed_.wait(hold, [&] { return !job_; });
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> hold(mutex_);
    for (;;) {
      changed_.wait(hold, [&] { return quit_ || job_; });
      if (!job_) return;  // quit, nothing left to run
      hold.unlock();
      job_();  // the job catches its own errors
      hold.lock();
      job_ = nullptr;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;
  bool quit_ = false;
  ThreadGroup thread_;  // destroyed first: its thread never outlives the members above
};

// The next batch of `feed`, a failure of the loader restated in the trainer's numbering (batch
// `batch` of `batches`, epoch `epoch` of `epochs`).
std::optional<std::vector<at::Tensor>> next_batch(torch_adapter::BatchFeed& feed,
                                                  std::uint64_t epoch, int epochs,
                                                  std::uint64_t batch, std::uint64_t batches) {
  try {
    return feed.next();
  } catch (const std::exception& error) {
    throw Error(loader_failure_text(error.what(), epoch, epochs, batch, batches));
  }
}

// One decision for all: runs that stop at different batches could not train together again
// when resumed.
void decide_stop_together(const std::vector<ModelRun*>& training) {
  if (training.size() <= 1) return;
  const bool stop = training.front()->stop_signalled();
  for (ModelRun* run : training) run->decide_stop(stop);
}

// What each worker thread sets first: `threads_per_model` intra-op threads and, on CUDA, the
// calling thread's stream, where the batches' copies are ordered.
std::function<void()> worker_setup(at::Device device, int threads_per_model) {
  std::function<void()> setup = [threads_per_model] { torch::set_num_threads(threads_per_model); };
#ifdef FFCV_WITH_CUDA
  if (device.is_cuda()) {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device.index());
    setup = [threads_per_model, stream] {
      torch::set_num_threads(threads_per_model);
      c10::cuda::set_device(stream.device_index());
      c10::cuda::setCurrentCUDAStream(stream);
    };
  }
#endif
  return setup;
}

// train_on_shared_batches: the runs of one group trained epoch after epoch on one loader.
class SharedBatchTraining {
 public:
  SharedBatchTraining(TrainData& data, const std::vector<ModelRun*>& group, at::Device device,
                      const RunFailed& failed, int threads_per_model, const std::vector<int>& views)
      : data_(data), device_(device), failed_(failed), runs_(group) {
    for (std::size_t k = 0; k < views.size() && k < group.size(); ++k) {
      view_of_[group[k]] = views[k];
    }
    // With several runs, each gets a thread of its own that makes every call of that run, so
    // that its thread-local settings (intra-op threads, the current CUDA stream) hold
    // throughout.
    if (threads_per_model > 0 && group.size() > 1) {
      const std::function<void()> setup = worker_setup(device, threads_per_model);
      for (ModelRun* run : group) workers_[run] = std::make_unique<SerialWorker>(setup);
    }
  }

  // Trains until every run is done, stopped or failed.
  void train() {
    for (ModelRun* run : runs_) run->validate_if_already_trained(data_.val());
    for (;;) {
      std::erase_if(runs_, [](ModelRun* run) { return run->done(); });
      if (runs_.empty()) return;
      try {
        train_one_epoch();
      } catch (...) {
        // A failure of the loader (storage, a sample) or of the runs' own work: each run still
        // training records it in its log before the error goes on.
        const std::string error = error_text(std::current_exception());
        for (ModelRun* run : runs_) run->record_failure(error);
        throw;
      }
    }
  }

 private:
  // Trains every run of `runs_` through one epoch on one pass of the loader.
  void train_one_epoch() {
    const Recipe& recipe = runs_.front()->recipe();
    const std::uint64_t epoch = runs_.front()->next_epoch();
    const int resolution = resolution_at(recipe.resolution, epoch);
    data_.set_train_resolution(resolution);
    const Stopwatch start;
    EpochIterator iterator = data_.train().epoch(epoch, runs_.front()->first_batch());
    const std::uint64_t first = runs_.front()->first_batch();
    const std::uint64_t batches = iterator.num_batches();
    for_each_run(runs_, [&](ModelRun* run) {
      run->begin_epoch(epoch, batches, resolution);
      return true;
    });
    if (runs_.empty()) return;
    const std::uint64_t iterations = runs_.front()->iterations();
    const InputNormalizer& normalizer = runs_.front()->normalizer();
    torch_adapter::BatchFeed feed(std::move(iterator), device_,
                                  view_of_.empty() ? normalizer.stages(data_.train())
                                                   : normalizer.view_stages(data_.train()));
    std::vector<ModelRun*> training = runs_;
    double wait_seconds = 0;
    for (std::uint64_t i = first; i < iterations && !training.empty(); ++i) {
      const Stopwatch wait_start;
      std::optional<std::vector<at::Tensor>> tensors =
          next_batch(feed, epoch, recipe.training.epochs, i, iterations);
      wait_seconds += wait_start.seconds();
      if (!tensors && recipe.data.on_error == "skip") break;  // its last batches were all skipped
      if (!tensors) throw Error("the loader ended the epoch before its last batch");
      const std::map<int, ModelInput> inputs = model_inputs(training, normalizer, *tensors);
      tensors.reset();
      decide_stop_together(training);
      // Runs that stopped (or failed) train no further batches this epoch.
      for (ModelRun* ended : for_each_run(
               training, [&](ModelRun* run) { return run->train(inputs.at(view_index(run))); })) {
        std::erase(training, ended);
      }
    }
    end_epoch(start.seconds(), wait_seconds);
  }

  // The model input of each view (or the one input), made once for the runs that need it.
  std::map<int, ModelInput> model_inputs(const std::vector<ModelRun*>& training,
                                         const InputNormalizer& normalizer,
                                         const std::vector<at::Tensor>& tensors) const {
    std::map<int, ModelInput> inputs;
    for (ModelRun* run : training) {
      const int v = view_index(run);
      if (inputs.count(v) != 0) continue;
      inputs[v] = v < 0 ? normalizer(tensors[0], tensors[1])
                        : normalizer.view_input(tensors[0], v, tensors[1]);
    }
    return inputs;
  }

  // Ends the epoch of every run: its statistics, then its evaluation, one run at a time since
  // the evaluations share the validation loader.
  void end_epoch(double epoch_seconds, double wait_seconds) {
    const LoaderStats stats = data_.train().current_epoch_stats();
    const std::size_t readers = runs_.size();
    for_each_run(
        runs_,
        [&](ModelRun* run) {
          run->end_epoch(epoch_seconds, wait_seconds, stats, readers, data_.val());
          return true;
        },
        /*one_at_a_time=*/true);
  }

  // The view `run` trains on, or -1 without views.
  int view_index(ModelRun* run) const {
    const auto view = view_of_.find(run);
    return view == view_of_.end() ? -1 : view->second;
  }

  // Calls work(run) for every run of `list`: at once on their workers (or one after another
  // with `one_at_a_time`, or without workers); then hands the runs that threw to `failed_` and
  // leaves them out from now on (without `failed_`, the first error propagates). Returns the
  // runs for which `work` returned false or threw.
  std::vector<ModelRun*> for_each_run(const std::vector<ModelRun*> list,  // a copy: runs_ changes
                                      const std::function<bool(ModelRun*)>& work,
                                      bool one_at_a_time = false) {
    std::vector<char> results(list.size(), 1);
    std::vector<std::exception_ptr> errors(list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
      std::function<void()> job = [&, k] {
        try {
          results[k] = work(list[k]);
        } catch (...) {
          errors[k] = std::current_exception();
        }
      };
      if (workers_.empty()) {
        job();
        continue;
      }
      SerialWorker& worker = *workers_.at(list[k]);
      worker.post(std::move(job));
      if (one_at_a_time) worker.wait();
    }
    for (ModelRun* run : list) {
      if (!workers_.empty()) workers_.at(run)->wait();
    }
    std::vector<ModelRun*> ended;
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (errors[k]) {
        if (!failed_) std::rethrow_exception(errors[k]);  // recorded where train() catches it
        list[k]->record_failure(error_text(errors[k]));
        failed_(*list[k], errors[k]);
        std::erase(runs_, list[k]);
      }
      if (errors[k] || !results[k]) ended.push_back(list[k]);
    }
    return ended;
  }

  TrainData& data_;
  at::Device device_;
  const RunFailed& failed_;
  std::vector<ModelRun*> runs_;  // still training: done and failed runs leave
  std::map<ModelRun*, int> view_of_;
  // Destroyed first: every worker's thread is joined before the members above go.
  std::map<ModelRun*, std::unique_ptr<SerialWorker>> workers_;
};

// The views of a group's runs: one per distinct seed, in order of first use.
struct SeedViews {
  int distinct = 0;        // seeds, so views of each image
  std::vector<int> views;  // by run; empty when every run has the same seed (no views)
};

SeedViews views_by_seed(const std::vector<ModelRun*>& group) {
  std::vector<std::uint64_t> seeds;
  SeedViews result;
  for (ModelRun* run : group) {
    const std::uint64_t seed = run->recipe().data.seed;
    auto at = std::find(seeds.begin(), seeds.end(), seed);
    if (at == seeds.end()) at = seeds.insert(seeds.end(), seed);
    result.views.push_back(static_cast<int>(at - seeds.begin()));
  }
  if (seeds.size() == 1) result.views.clear();
  result.distinct = static_cast<int>(seeds.size());
  return result;
}

// One thread's work: the runs of one group (shared) or one run (threads).
class Unit {
 public:
  Unit(const std::vector<TogetherRun>& runs, std::vector<std::size_t> members,
       std::vector<TogetherOutcome>& outcomes, int cores, std::mutex* forward_lock)
      : runs_(runs),
        members_(std::move(members)),
        outcomes_(outcomes),
        cores_(cores),
        forward_lock_(forward_lock),
        failed_(members_.size(), false) {}

  void train() {
    try {
      train_members();
    } catch (...) {
      // Set-up of the thread itself (device, stream): every run not ended yet fails.
      for (std::size_t k = 0; k < members_.size(); ++k) {
        if (!outcomes_[members_[k]].ok && !failed_[k]) fail(k, std::current_exception());
      }
    }
  }

 private:
  void train_members() {
    const Recipe& first = runs_[members_.front()].recipe;
    // The models of a shared group divide this thread's share of the cores.
    const int threads = first.training.threads > 0
                            ? first.training.threads
                            : std::max(1, cores_ / static_cast<int>(members_.size()));
    torch::set_num_threads(threads);
    const at::Device device = training_device(first.training.device, 0);
    apply_cudnn_settings(first.training);
#ifdef FFCV_WITH_CUDA
    // A stream of this thread's own, so that its kernels and copies overlap the other runs'.
    std::optional<c10::cuda::CUDAStreamGuard> stream;
    if (device.is_cuda()) {
      c10::cuda::set_device(device.index());
      stream.emplace(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()));
    }
#endif
    Communicator comm(RankInfo{}, "gloo");  // one process: no process group
    std::vector<std::unique_ptr<ModelRun>> models(members_.size());
    for (const auto& [place, group] : start_models(device, comm, models)) {
      train_group(place.first, group, models, device, threads);
    }
    finish_models(models);
  }

  // Where runs start: (next_epoch, first_batch).
  using Place = std::pair<std::uint64_t, std::uint64_t>;

  // Makes every member's model into `models` (by position in members_), and returns the runs
  // still to train grouped by where they start.
  std::map<Place, std::vector<std::size_t>> start_models(
      const at::Device& device, Communicator& comm,
      std::vector<std::unique_ptr<ModelRun>>& models) {
    std::map<Place, std::vector<std::size_t>> by_place;
    for (std::size_t k = 0; k < members_.size(); ++k) {
      const std::size_t i = members_[k];
      try {
        Recipe recipe = runs_[i].recipe;
        recipe.dist.world_size = 1;
        recipe.data.num_workers = resolve_workers(recipe.data.num_workers, cores_);
        check_labels_fit_model(recipe);
        RunOptions options = runs_[i].options;
        if (forward_lock_ != nullptr) options.forward_lock = forward_lock_;
        models[k] = std::make_unique<ModelRun>(recipe, options, device, comm);
        if (models[k]->done()) continue;  // finished before, or nothing to train
        by_place[{models[k]->next_epoch(), models[k]->first_batch()}].push_back(k);
      } catch (...) {
        models[k].reset();
        fail(k, std::current_exception());
      }
    }
    return by_place;
  }

  // Trains the runs `group` (positions in members_) that start at epoch `epoch` on one loader.
  void train_group(std::uint64_t epoch, const std::vector<std::size_t>& group,
                   const std::vector<std::unique_ptr<ModelRun>>& models, const at::Device& device,
                   int threads) {
    std::vector<ModelRun*> group_runs;
    for (const std::size_t k : group) group_runs.push_back(models[k].get());
    const Recipe& recipe = group_runs.front()->recipe();
    const SeedViews seeds = views_by_seed(group_runs);
    try {
      TrainData data(recipe, ShardSpec{}, resolution_at(recipe.resolution, epoch),
                     device.is_cuda()
                         ? std::optional<BatchAllocator>(torch_adapter::pinned_allocator())
                         : std::nullopt,
                     seeds.distinct);
      for (ModelRun* run : group_runs) {
        run->announce(data.train().reader().num_samples(), data.val().reader().num_samples(),
                      recipe.data.num_workers);
      }
      train_on_shared_batches(
          data, group_runs, device,
          [&](ModelRun& run, std::exception_ptr e) {
            for (const std::size_t k : group) {
              if (models[k].get() == &run) fail(k, e);
            }
          },
          threads, seeds.views);
    } catch (...) {
      // The group's loader failed: every run of the group that was still training.
      for (const std::size_t k : group) {
        if (!failed_[k]) fail(k, std::current_exception());
      }
    }
  }

  // The outcome of every member that trained without failing: its summary.
  void finish_models(const std::vector<std::unique_ptr<ModelRun>>& models) {
    for (std::size_t k = 0; k < members_.size(); ++k) {
      if (!models[k] || failed_[k]) continue;
      try {
        outcomes_[members_[k]].summary = models[k]->finish();
        outcomes_[members_[k]].ok = true;
      } catch (...) {
        fail(k, std::current_exception());
      }
    }
  }

  // Member `k` ended in `error`: its outcome says so, and it takes no further part.
  void fail(std::size_t k, std::exception_ptr error) {
    failed_[k] = true;
    outcomes_[members_[k]].ok = false;
    outcomes_[members_[k]].error = error_text(error);
  }

  const std::vector<TogetherRun>& runs_;
  std::vector<std::size_t> members_;
  std::vector<TogetherOutcome>& outcomes_;
  int cores_;
  std::mutex* forward_lock_;
  std::vector<bool> failed_;  // by position in members_: the run threw
};

}  // namespace

bool shares_batches(const Recipe& a, const Recipe& b, bool ignore_seed) {
  return batch_settings(a, ignore_seed) == batch_settings(b, ignore_seed);
}

void train_on_shared_batches(TrainData& data, const std::vector<ModelRun*>& group,
                             at::Device device, const RunFailed& failed, int threads_per_model,
                             const std::vector<int>& views) {
  SharedBatchTraining(data, group, device, failed, threads_per_model, views).train();
}

std::vector<TogetherOutcome> train_together(const std::vector<TogetherRun>& runs,
                                            const TogetherOptions& options) {
  const bool shared = options.how == Together::kShared;
  std::vector<std::vector<std::size_t>> units;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto unit = std::find_if(units.begin(), units.end(), [&](const std::vector<std::size_t>& u) {
      return shared && shares_batches(runs[u.front()].recipe, runs[i].recipe, options.share_seeds);
    });
    if (unit == units.end()) {
      units.push_back({i});
    } else {
      unit->push_back(i);
    }
  }
  if (options.models_per_group > 0) {
    // Large groups train in turns of at most that many models, each turn with a loader of its
    // own: the memory of a group grows with its models.
    const std::size_t most = static_cast<std::size_t>(options.models_per_group);
    std::vector<std::vector<std::size_t>> turns;
    for (const std::vector<std::size_t>& unit : units) {
      for (std::size_t begin = 0; begin < unit.size(); begin += most) {
        const std::size_t end = std::min(unit.size(), begin + most);
        turns.emplace_back(unit.begin() + static_cast<std::ptrdiff_t>(begin),
                           unit.begin() + static_cast<std::ptrdiff_t>(end));
      }
    }
    units = std::move(turns);
  }
  std::vector<TogetherOutcome> outcomes(runs.size());
  if (units.empty()) return outcomes;
  const int threads =
      std::clamp(options.parallel > 0 ? options.parallel : static_cast<int>(units.size()), 1,
                 static_cast<int>(units.size()));
  const int cores = cores_per_share(threads);
  std::mutex forward_mutex;
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t u = next++; u < units.size(); u = next++) {
      const RunOptions& options_of_unit = runs[units[u].front()].options;
      if (options_of_unit.stop != nullptr && options_of_unit.stop->load()) {
        for (const std::size_t i : units[u]) outcomes[i].not_started = true;
        continue;  // a stop was asked: no new unit starts
      }
      Unit(runs, units[u], outcomes, cores, options.forward_lock ? &forward_mutex : nullptr)
          .train();
    }
  };
  ThreadGroup pool;
  pool.start(threads, [&](int) { work(); });
  pool.join();
  return outcomes;
}

}  // namespace ffcv::train
