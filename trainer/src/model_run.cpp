#include "ffcv/train/model_run.hpp"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/checkpoint_recipe.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/resnet.hpp"
#include "ffcv/train/resume_check.hpp"
#include "ffcv/train/schedules.hpp"
#include "ffcv/train/train_step.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/fnv1a.hpp"
#include "ffcv/util/progress_bar.hpp"

namespace ffcv::train {
namespace {

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.2f%%", 100.0 * fraction);
  return text;
}

std::string printed(const char* format, auto... values) {
  char text[512];
  std::snprintf(text, sizeof(text), format, values...);
  return text;
}

// The run folder's lock, taken before anything is written into it (main rank only). First,
// before any folder or model is made: a run resumes only from a checkpoint its own recipe saved
// (resume_check.hpp).
FolderLock lock_run_folder(const Recipe& recipe, const RunOptions& options, bool main_rank) {
  if (!recipe.checkpoint.resume.empty()) {
    check_resume_recipe(recipe.checkpoint.resume, read_checkpoint_recipe(recipe.checkpoint.resume),
                        recipe_to_toml(recipe));
  }
  if (options.run_dir.empty() || !main_rank) return FolderLock();
  return FolderLock(options.run_dir, "run folder");
}

// Creates the run folder with the resolved recipe (main rank only). Returns the checkpoint's
// path, or "" when the run has no folder.
std::string make_run_folder(const Recipe& recipe, const RunOptions& options, bool main_rank) {
  if (options.run_dir.empty()) return "";
  if (main_rank) {
    std::filesystem::create_directories(options.run_dir);
    write_text_file(options.run_dir + "/recipe.toml", recipe_to_toml(recipe));
  }
  return options.run_dir + "/checkpoint.pt";
}

// FNV-1a over the bytes of every parameter and buffer, as 16 hex digits: equal exactly when
// two models' weights are equal bit for bit (short of a hash collision).
std::string weights_digest(torch::nn::Module& model) {
  Fnv1a hash;
  const auto add = [&](const at::Tensor& tensor) {
    const at::Tensor bytes = tensor.detach().cpu().contiguous();
    hash.add(bytes.data_ptr(), bytes.nbytes());
  };
  for (const at::Tensor& p : model.parameters()) add(p);
  for (const at::Tensor& b : model.buffers()) add(b);
  return hash.hex();
}

}  // namespace

at::Device training_device(const std::string& setting, int local_rank) {
  const bool cuda = torch::cuda::is_available();
  if (setting == "cpu" || (setting == "auto" && !cuda)) return at::Device(at::kCPU);
  if (!cuda) throw ConfigError("training.device = \"cuda\" but no CUDA device is available");
  const int count = static_cast<int>(torch::cuda::device_count());
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
}

ModelRun::ModelRun(const Recipe& recipe, const RunOptions& options, at::Device device,
                   Communicator& communicator)
    : recipe_(recipe),
      options_(options),
      device_(device),
      comm_(communicator),
      main_rank_(communicator.is_main()),
      verbose_(communicator.is_main() && !options.quiet),
      folder_lock_(lock_run_folder(recipe_, options, main_rank_)),
      checkpoint_path_(make_run_folder(recipe_, options, main_rank_)),
      step_(std::make_unique<TrainStep>(recipe_, device, communicator)),
      normalize_(recipe_.data.mean, recipe_.data.std, device, step_->input_dtype(),
                 recipe_.training.channels_last, recipe_.data.interpolation),
      log_(main_rank_ && !options.run_dir.empty() ? options.run_dir + "/log.jsonl" : "") {
  step_->set_forward_lock(options.forward_lock);
  if (!recipe_.checkpoint.resume.empty()) {
    // The checkpoint restores torch's global generator too: not while another thread seeds it.
    const std::lock_guard<std::mutex> hold(global_generator_lock());
    position_ = load_checkpoint(recipe_.checkpoint.resume, *step_->model(), step_->optimizer(),
                                step_->scaler(), &totals_);
    step_->broadcast_state();
  }
  log_.write(JsonRecord()
                 .add("event", "start")
                 .add("recipe", recipe_.name)
                 .add("arch", recipe_.model.arch)
                 .add("width", recipe_.model.width)
                 .add("parameters", parameter_count(*step_->model()))
                 .add("device", device_.str())
                 .add("precision", recipe_.training.precision)
                 .add("world_size", comm_.world_size())
                 .add("threads", torch::get_num_threads())
                 .add("cpus", cpu_list_text(affinity_cpus()))
                 .add("resumed_epoch", position_.epoch)
                 .add("resumed_batches", position_.batches_done));
}

ModelRun::~ModelRun() = default;

void ModelRun::say(const std::string& line) const {
  if (!verbose_) return;
  std::printf("%s%s\n", options_.label.empty() ? "" : ("[" + options_.label + "] ").c_str(),
              line.c_str());
  std::fflush(stdout);
}

void ModelRun::announce(std::uint64_t train_samples, std::uint64_t val_samples,
                        int loader_workers) {
  const int ranks = comm_.world_size();
  say(printed(
      "run: %s, %s x%.3g (%lld parameters, %d BlurPool convs), %s, %s, %d rank%s (%s), "
      "%d threads, %d loader workers",
      recipe_.name.c_str(), recipe_.model.arch.c_str(), recipe_.model.width,
      static_cast<long long>(parameter_count(*step_->model())), step_->blurpool_convs(),
      device_.str().c_str(), recipe_.training.precision.c_str(), ranks, ranks == 1 ? "" : "s",
      comm_.backend().c_str(), torch::get_num_threads(), loader_workers));
  say(printed("data: %llu training samples, %llu validation samples",
              static_cast<unsigned long long>(train_samples),
              static_cast<unsigned long long>(val_samples)));
  if (!options_.run_dir.empty()) say("output: " + options_.run_dir);
}

void ModelRun::begin_epoch(std::uint64_t epoch, std::uint64_t batches, int resolution) {
  // Every rank runs the same number of iterations, or the collectives would not pair up.
  at::Tensor rank_batches = torch::tensor({static_cast<std::int64_t>(batches)}, torch::kInt64);
  comm_.min(rank_batches);
  iterations_ = static_cast<std::uint64_t>(rank_batches.item<std::int64_t>());
  if (iterations_ == 0) {
    throw ConfigError(url_without_password(recipe_.data.train) +
                      ": fewer samples per rank than one batch of " +
                      std::to_string(recipe_.training.batch_size));
  }
  epoch_ = epoch;
  in_epoch_ = true;
  batch_ = position_.batches_done;
  done_ = 0;
  resolution_ = resolution;
  lr_ = 0;
  step_->model()->train();
  loss_sum_ = torch::zeros({1}, torch::TensorOptions().device(device_).dtype(at::kDouble));
  correct_ = torch::zeros({1}, torch::TensorOptions().device(device_).dtype(at::kLong));
  // An epoch resumed part-way continues the sums of the batches trained before it stopped, so
  // that its mean loss is the whole epoch's, as in a run that never stopped.
  batches_before_ = 0;
  if (batch_ > 0 && main_rank_) {
    loss_sum_ += totals_.stopped_epoch_loss_sum;
    correct_ += static_cast<std::int64_t>(totals_.stopped_epoch_correct);
    batches_before_ = totals_.stopped_epoch_batches;
  }
  totals_.stopped_epoch_loss_sum = totals_.stopped_epoch_correct = 0;
  totals_.stopped_epoch_batches = 0;
  bar_.reset();
  if (main_rank_ && options_.progress) {
    const std::uint64_t global_batch =
        static_cast<std::uint64_t>(recipe_.training.batch_size) * comm_.world_size();
    bar_ = std::make_unique<ProgressBar>(
        "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(recipe_.training.epochs),
        (iterations_ - std::min(iterations_, batch_)) * global_batch, "images");
  }
}

bool ModelRun::stop_requested() {
  const bool stop =
      decided_stop_.value_or(stop_signalled()) ||
      (options_.stop_after_steps != 0 && position_.steps >= options_.stop_after_steps);
  if (comm_.world_size() == 1) return stop;
  if (batch_ % 16 != 15) return false;  // ranks agree every 16 iterations
  at::Tensor flag = torch::tensor({stop ? 1.0 : 0.0}, torch::kFloat64);
  comm_.sum(flag);
  return flag.item<double>() > 0;
}

bool ModelRun::train(const ModelInput& input) {
  lr_ = lr_at_iteration(recipe_.lr, recipe_.training.epochs, epoch_, batch_, iterations_);
  const StepResult result = (*step_)(input, lr_);
  {
    torch::NoGradGuard no_grad;
    loss_sum_ += result.loss.to(at::kDouble);
    correct_ += result.correct;
  }
  ++position_.steps;
  ++done_;
  if (bar_) {
    bar_->update(done_ * static_cast<std::uint64_t>(recipe_.training.batch_size) *
                 comm_.world_size());
  }
  const bool stop = stop_requested();
  ++batch_;
  if (stop) stopped_ = true;
  return !stop;
}

void ModelRun::end_stopped_epoch(const at::Tensor& totals) {
  position_.batches_done = batch_;
  totals_.stopped_epoch_loss_sum = totals[0].item<double>();
  totals_.stopped_epoch_correct = totals[1].item<double>();
  totals_.stopped_epoch_batches = static_cast<std::uint64_t>(totals[2].item<double>());
  if (main_rank_ && !checkpoint_path_.empty()) {
    save_checkpoint(checkpoint_path_, *step_->model(), step_->optimizer(), step_->scaler(),
                    position_, recipe_to_toml(recipe_), totals_);
  }
  log_.write(JsonRecord()
                 .add("event", "stopped")
                 .add("epoch", epoch_)
                 .add("batches_done", batch_)
                 .add("steps", position_.steps)
                 .add("checkpoint", checkpoint_path_));
  say(printed("stopped in epoch %llu after batch %llu; checkpoint: %s",
              static_cast<unsigned long long>(epoch_ + 1), static_cast<unsigned long long>(batch_),
              checkpoint_path_.c_str()));
}

void ModelRun::end_epoch(double epoch_seconds, double wait_seconds, const LoaderStats& loader,
                         std::size_t shared_by, Loader& val) {
  if (bar_) bar_->finish();
  bar_.reset();
  const std::uint64_t global_batch =
      static_cast<std::uint64_t>(recipe_.training.batch_size) * comm_.world_size();
  at::Tensor totals =
      torch::cat({loss_sum_.cpu(), correct_.cpu().to(at::kDouble),
                  torch::tensor({static_cast<double>(done_ + batches_before_)}, at::kDouble)});
  comm_.sum(totals);
  const double batches_all = std::max(1.0, totals[2].item<double>());
  const double epoch_loss = totals[0].item<double>() / batches_all;
  const double train_accuracy =
      totals[1].item<double>() / (batches_all * recipe_.training.batch_size);
  totals_.train_seconds += epoch_seconds;
  totals_.train_images += done_ * global_batch;
  const double images_per_second = done_ * global_batch / std::max(1e-9, epoch_seconds);

  if (stopped_) {
    end_stopped_epoch(totals);
    in_epoch_ = false;
    return;
  }
  if (!std::isfinite(epoch_loss)) {
    throw Error("training diverged: the mean training loss of epoch " + std::to_string(epoch_ + 1) +
                " is " + std::to_string(epoch_loss) + " (lr.lr = " + std::to_string(recipe_.lr.lr) +
                ")");
  }
  totals_.last_epoch_loss = epoch_loss;
  position_.epoch = epoch_ + 1;
  position_.batches_done = 0;

  const bool last = epoch_ + 1 == static_cast<std::uint64_t>(recipe_.training.epochs);
  const int every = recipe_.validation.every;
  const bool evaluate_now = last || (every > 0 && (epoch_ + 1) % every == 0);
  JsonRecord record;
  record.add("event", "epoch")
      .add("epoch", epoch_)
      .add("resolution", resolution_)
      .add("lr", lr_)
      .add("train_loss", epoch_loss)
      .add("train_top1", train_accuracy)
      .add("images_per_second", images_per_second)
      .add("epoch_seconds", epoch_seconds)
      .add("loader_wait_seconds", wait_seconds)
      .add("skipped_samples", loader.skipped_samples)
      .add("loader_process_seconds", loader.process_seconds)
      .add("loader_process_cpu_seconds", loader.process_cpu_seconds)
      .add("threads", torch::get_num_threads())
      .add("loader_shared_by", static_cast<std::uint64_t>(shared_by))
      .add("step_seconds", epoch_seconds - wait_seconds)
      .add("loss_scale", step_->scaler().current_scale());
  std::string line =
      printed("epoch %llu/%d  res %d  lr %.4g  loss %.4f  train %s  %.0f img/s  loader wait %.0f%%",
              static_cast<unsigned long long>(epoch_ + 1), recipe_.training.epochs, resolution_,
              lr_, epoch_loss, percent(train_accuracy).c_str(), images_per_second,
              100.0 * wait_seconds / std::max(1e-9, epoch_seconds));
  if (evaluate_now) line += validate(val, epoch_, record);
  log_.write(record);
  say(line);
  const int checkpoint_every = recipe_.checkpoint.every;
  if (main_rank_ && !checkpoint_path_.empty() && checkpoint_every > 0 &&
      (last || (epoch_ + 1) % checkpoint_every == 0)) {
    save_checkpoint(checkpoint_path_, *step_->model(), step_->optimizer(), step_->scaler(),
                    position_, recipe_to_toml(recipe_), totals_);
  }
  in_epoch_ = false;
}

void ModelRun::record_failure(const std::string& error) {
  // Between epochs (the next one could not start), the failure belongs to the next epoch.
  log_.write(JsonRecord()
                 .add("event", "failed")
                 .add("epoch", in_epoch_ ? epoch_ : position_.epoch)
                 .add("batch", in_epoch_ ? batch_ : position_.batches_done)
                 .add("error", redact_url_passwords(error)));
}

std::string ModelRun::validate(Loader& val, std::uint64_t epoch, JsonRecord& record) {
  step_->model()->eval();
  step_->broadcast_buffers();
  const auto forward = [&](const at::Tensor& images) { return step_->forward_eval(images); };
  last_eval_ = evaluate(forward, val, epoch, normalize_, recipe_.validation.tta, comm_);
  evaluated_ = true;
  record.add("val_top1", last_eval_.top1)
      .add("val_top5", last_eval_.top5)
      .add("val_loss", last_eval_.loss)
      .add("val_seconds", last_eval_.seconds);
  return printed("  val top1 %s top5 %s (%.1f s)", percent(last_eval_.top1).c_str(),
                 percent(last_eval_.top5).c_str(), last_eval_.seconds);
}

void ModelRun::validate_if_already_trained(Loader& val) {
  if (evaluated_ || stopped_ || !done()) return;
  JsonRecord record;
  record.add("event", "validated").add("epochs_done", position_.epoch);
  const std::string line = validate(val, position_.epoch == 0 ? 0 : position_.epoch - 1, record);
  log_.write(record);
  say("no epochs left to train (resumed after epoch " + std::to_string(position_.epoch) + " of " +
      std::to_string(recipe_.training.epochs) + "):" + line);
}

RunSummary ModelRun::finish() {
  RunSummary summary;
  summary.run_dir = options_.run_dir;
  // Replicas must agree: compare every parameter's sum across ranks.
  const std::vector<at::Tensor> parameters = step_->model()->parameters();
  at::Tensor sums = torch::empty({static_cast<std::int64_t>(parameters.size())}, at::kDouble);
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    sums[static_cast<std::int64_t>(k)] = parameters[k].detach().to(at::kDouble).sum().cpu();
  }
  at::Tensor low = sums.clone(), negated_high = -sums;
  comm_.min(low);
  comm_.min(negated_high);
  summary.replicas_identical = torch::equal(low, -negated_high);
  summary.parameter_checksum = sums.sum().item<double>();
  summary.weights_digest = weights_digest(*step_->model());
  summary.finished = !stopped_;
  summary.epochs_done = position_.epoch;
  summary.steps = position_.steps;
  summary.train_loss = totals_.last_epoch_loss;
  summary.train_seconds = totals_.train_seconds;
  summary.images_per_second =
      static_cast<double>(totals_.train_images) / std::max(1e-9, totals_.train_seconds);
  if (evaluated_) {
    summary.val_top1 = last_eval_.top1;
    summary.val_top5 = last_eval_.top5;
    summary.val_loss = last_eval_.loss;
  }
  if (main_rank_ && !options_.run_dir.empty()) {
    JsonRecord record;
    record.add("recipe", recipe_.name)
        .add("finished", summary.finished)
        .add("epochs_done", summary.epochs_done)
        .add("steps", summary.steps)
        .add("world_size", comm_.world_size())
        .add("val_top1", summary.val_top1)
        .add("val_top5", summary.val_top5)
        .add("val_loss", summary.val_loss)
        .add("train_loss", summary.train_loss)
        .add("train_seconds", summary.train_seconds)
        .add("images_per_second", summary.images_per_second)
        .add("replicas_identical", summary.replicas_identical)
        .add("parameter_checksum", summary.parameter_checksum)
        .add("weights_digest", summary.weights_digest)
        .add("skipped_steps", step_->scaler().skipped_steps());
    write_text_file(options_.run_dir + "/summary.json", record.str() + "\n");
  }
  return summary;
}

}  // namespace ffcv::train
