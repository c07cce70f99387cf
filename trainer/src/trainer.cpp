#include "ffcv/train/trainer.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "ffcv/errors.hpp"
#include "ffcv/cpu_count.hpp"
#include "ffcv/progress_bar.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/train/batch_feed.hpp"
#include "ffcv/train/batch_input.hpp"
#include "ffcv/train/checkpoint.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/evaluate.hpp"
#include "ffcv/train/resnet.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/train/schedules.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/train/train_step.hpp"
#ifdef FFCV_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace ffcv::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

at::Device choose_device(const std::string& setting, int local_rank) {
  const bool cuda = torch::cuda::is_available();
  if (setting == "cpu" || (setting == "auto" && !cuda)) return at::Device(at::kCPU);
  if (!cuda) throw ConfigError("training.device = \"cuda\" but no CUDA device is available");
  const int count = static_cast<int>(torch::cuda::device_count());
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
}

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.2f%%", 100.0 * fraction);
  return text;
}

}  // namespace

RunSummary run_training(const Recipe& recipe_in, const RunOptions& options) {
  Recipe recipe = recipe_in;
  const RankInfo info = rank_from_environment(recipe.dist);
  recipe.dist.world_size = info.world_size;
  const at::Device device = choose_device(recipe.training.device, info.local_rank);
  const bool on_cuda = device.is_cuda();
#ifdef FFCV_WITH_CUDA
  // The rank's GPU becomes current before anything touches CUDA, so that pinned memory, events,
  // NCCL and kernels launched without an explicit device all land on it rather than on GPU 0.
  if (on_cuda) c10::cuda::set_device(device.index());
#endif
  const std::string backend = resolve_backend(recipe.dist.backend, on_cuda);
  if (backend == "nccl" && info.local_world_size > static_cast<int>(torch::cuda::device_count())) {
    throw ConfigError(
        "NCCL needs a GPU of its own per rank: " + std::to_string(info.local_world_size) +
        " ranks on this machine but " + std::to_string(torch::cuda::device_count()) +
        " CUDA device(s); start at most that many (--nproc), or set "
        "dist.backend = \"gloo\" to share a GPU");
  }
  Communicator comm(info, backend);
  const bool main_rank = comm.is_main();
  const bool verbose = main_rank && !options.quiet;

  // Threads: the recipe's, or this machine's cores shared among its ranks.
  const int cores = available_cores();
  const int per_rank = std::max(1, cores / info.local_world_size);
  torch::set_num_threads(recipe.training.threads > 0 ? recipe.training.threads : per_rank);
  if (recipe.data.num_workers == 0) recipe.data.num_workers = per_rank;
  apply_cudnn_settings(recipe.training);

  check_labels_fit_model(recipe);
  RunSummary summary;
  summary.run_dir = options.run_dir;
  if (main_rank && !options.run_dir.empty()) {
    std::filesystem::create_directories(options.run_dir);
    write_text_file(options.run_dir + "/recipe.toml", recipe_to_toml(recipe));
  }
  RunLog log(main_rank && !options.run_dir.empty() ? options.run_dir + "/log.jsonl" : "");
  const std::string checkpoint_path =
      options.run_dir.empty() ? "" : options.run_dir + "/checkpoint.pt";

  // The model, identical on every rank, and its optimizer.
  TrainStep step(recipe, device, comm);
  ResNet& model = step.model();
  const std::string& precision = recipe.training.precision;

  TrainPosition position;
  if (!recipe.checkpoint.resume.empty()) {
    position = load_checkpoint(recipe.checkpoint.resume, *model, step.optimizer(), step.scaler());
    step.broadcast_state();
  }

  const int epochs = recipe.training.epochs;
  std::optional<BatchAllocator> allocator;
  if (on_cuda) allocator = torch_adapter::pinned_allocator();
  TrainData data(recipe, ShardSpec{info.rank, info.world_size},
                 resolution_at(recipe.resolution, position.epoch), allocator);
  // Inputs in the compute dtype on CUDA (half the bytes through the network's first layer);
  // float32 on the CPU, where autocast converts as it needs.
  const InputNormalizer normalize(recipe.data.mean, recipe.data.std, device, step.input_dtype(),
                                  recipe.training.channels_last);
  const auto forward_eval = [&](const at::Tensor& images) { return step.forward_eval(images); };

  if (verbose) {
    std::printf(
        "run: %s, %s x%.3g (%lld parameters, %d BlurPool convs), %s, %s, %d rank%s (%s), "
        "%d threads, %d loader workers\n",
        recipe.name.c_str(), recipe.model.arch.c_str(), recipe.model.width,
        static_cast<long long>(parameter_count(*model)), step.blurpool_convs(),
        device.str().c_str(), precision.c_str(), info.world_size, info.world_size == 1 ? "" : "s",
        comm.backend().c_str(), torch::get_num_threads(), recipe.data.num_workers);
    std::printf("data: %llu training samples, %llu validation samples\n",
                static_cast<unsigned long long>(data.train().reader().num_samples()),
                static_cast<unsigned long long>(data.val().reader().num_samples()));
    if (!options.run_dir.empty()) std::printf("output: %s\n", options.run_dir.c_str());
    std::fflush(stdout);
  }
  log.write(JsonRecord()
                .add("event", "start")
                .add("recipe", recipe.name)
                .add("arch", recipe.model.arch)
                .add("width", recipe.model.width)
                .add("parameters", parameter_count(*model))
                .add("device", device.str())
                .add("precision", precision)
                .add("world_size", info.world_size)
                .add("threads", torch::get_num_threads())
                .add("resumed_epoch", position.epoch)
                .add("resumed_batches", position.batches_done));

  const auto stop_requested = [&](std::uint64_t iteration) {
    bool stop = (options.stop != nullptr && options.stop->load()) ||
                (options.stop_after_steps != 0 && position.steps >= options.stop_after_steps);
    if (info.world_size == 1) return stop;
    if (iteration % 16 != 15) return false;  // ranks agree every 16 iterations
    at::Tensor flag = torch::tensor({stop ? 1.0 : 0.0}, torch::kFloat64);
    comm.sum(flag);
    return flag.item<double>() > 0;
  };

  EvalResult last_eval;
  bool evaluated = false;
  double train_seconds = 0;
  std::uint64_t train_images = 0;
  double last_loss = 0;
  bool stopped = false;
  for (std::uint64_t epoch = position.epoch; epoch < static_cast<std::uint64_t>(epochs); ++epoch) {
    const int resolution = resolution_at(recipe.resolution, epoch);
    data.set_train_resolution(resolution);
    model->train();
    const auto epoch_start = Clock::now();
    EpochIterator iterator = data.train().epoch(epoch, position.batches_done);
    // Every rank runs the same number of iterations, or the collectives would not pair up.
    at::Tensor rank_batches =
        torch::tensor({static_cast<std::int64_t>(iterator.num_batches())}, torch::kInt64);
    comm.min(rank_batches);
    const std::uint64_t iters = static_cast<std::uint64_t>(rank_batches.item<std::int64_t>());
    if (iters == 0) {
      throw ConfigError(recipe.data.train + ": fewer samples per rank than one batch of " +
                        std::to_string(recipe.training.batch_size));
    }
    BatchFeed feed(std::move(iterator), device, normalize.stages(data.train()));
    const std::uint64_t global_batch =
        static_cast<std::uint64_t>(recipe.training.batch_size) * info.world_size;
    ProgressBar bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs),
                    (iters - std::min(iters, position.batches_done)) * global_batch, "images");
    at::Tensor loss_sum =
        torch::zeros({1}, torch::TensorOptions().device(device).dtype(at::kDouble));
    at::Tensor correct = torch::zeros({1}, torch::TensorOptions().device(device).dtype(at::kLong));
    double wait_seconds = 0;
    double lr = 0;
    std::uint64_t done = 0;
    std::uint64_t i = position.batches_done;
    for (; i < iters; ++i) {
      lr = lr_at_iteration(recipe.lr, epochs, epoch, i, iters);
      const auto wait_start = Clock::now();
      std::optional<std::vector<at::Tensor>> tensors = feed.next();
      wait_seconds += seconds_since(wait_start);
      if (!tensors && recipe.data.on_error == "skip") break;  // its last batches were all skipped
      if (!tensors) throw Error("the loader ended the epoch before its last batch");
      const ModelInput input = normalize((*tensors)[0], (*tensors)[1]);
      tensors.reset();
      const StepResult result = step(input, lr);
      {
        torch::NoGradGuard no_grad;
        loss_sum += result.loss.to(at::kDouble);
        correct += result.correct;
      }
      ++position.steps;
      ++done;
      if (main_rank && options.progress) bar.update(done * global_batch);
      if (stop_requested(i)) {
        stopped = true;
        ++i;
        break;
      }
    }
    if (main_rank && options.progress) bar.finish();
    const double epoch_seconds = seconds_since(epoch_start);
    at::Tensor totals = torch::cat({loss_sum.cpu(), correct.cpu().to(at::kDouble),
                                    torch::tensor({static_cast<double>(done)}, at::kDouble)});
    comm.sum(totals);
    const double batches_all = std::max(1.0, totals[2].item<double>());
    last_loss = totals[0].item<double>() / batches_all;
    const double train_accuracy =
        totals[1].item<double>() / (batches_all * recipe.training.batch_size);
    train_seconds += epoch_seconds;
    train_images += done * global_batch;
    const double images_per_second = done * global_batch / std::max(1e-9, epoch_seconds);

    if (stopped) {
      position.batches_done = i;
      if (main_rank && !checkpoint_path.empty()) {
        save_checkpoint(checkpoint_path, *model, step.optimizer(), step.scaler(), position,
                        recipe_to_toml(recipe));
      }
      log.write(JsonRecord()
                    .add("event", "stopped")
                    .add("epoch", epoch)
                    .add("batches_done", i)
                    .add("steps", position.steps)
                    .add("checkpoint", checkpoint_path));
      if (verbose) {
        std::printf("stopped in epoch %llu after batch %llu; checkpoint: %s\n",
                    static_cast<unsigned long long>(epoch + 1), static_cast<unsigned long long>(i),
                    checkpoint_path.c_str());
      }
      break;
    }
    position.epoch = epoch + 1;
    position.batches_done = 0;

    const bool last = epoch + 1 == static_cast<std::uint64_t>(epochs);
    const int every = recipe.validation.every;
    const bool evaluate_now = last || (every > 0 && (epoch + 1) % every == 0);
    JsonRecord record;
    record.add("event", "epoch")
        .add("epoch", epoch)
        .add("resolution", resolution)
        .add("lr", lr)
        .add("train_loss", last_loss)
        .add("train_top1", train_accuracy)
        .add("images_per_second", images_per_second)
        .add("epoch_seconds", epoch_seconds)
        .add("loader_wait_seconds", wait_seconds)
        .add("skipped_samples", data.train().current_epoch_stats().skipped_samples)
        .add("step_seconds", epoch_seconds - wait_seconds)
        .add("loss_scale", step.scaler().current_scale());
    if (evaluate_now) {
      model->eval();
      step.broadcast_buffers();
      last_eval = evaluate(forward_eval, data.val(), epoch, normalize, recipe.validation.tta, comm);
      evaluated = true;
      record.add("val_top1", last_eval.top1)
          .add("val_top5", last_eval.top5)
          .add("val_loss", last_eval.loss)
          .add("val_seconds", last_eval.seconds);
    }
    log.write(record);
    if (verbose) {
      std::printf(
          "epoch %llu/%d  res %d  lr %.4g  loss %.4f  train %s  %.0f img/s  loader wait "
          "%.0f%%",
          static_cast<unsigned long long>(epoch + 1), epochs, resolution, lr, last_loss,
          percent(train_accuracy).c_str(), images_per_second,
          100.0 * wait_seconds / std::max(1e-9, epoch_seconds));
      if (evaluate_now) {
        std::printf("  val top1 %s top5 %s (%.1f s)", percent(last_eval.top1).c_str(),
                    percent(last_eval.top5).c_str(), last_eval.seconds);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    const int checkpoint_every = recipe.checkpoint.every;
    if (main_rank && !checkpoint_path.empty() && checkpoint_every > 0 &&
        (last || (epoch + 1) % checkpoint_every == 0)) {
      save_checkpoint(checkpoint_path, *model, step.optimizer(), step.scaler(), position,
                      recipe_to_toml(recipe));
    }
  }

  // Replicas must agree: compare every parameter's sum across ranks.
  const std::vector<at::Tensor> parameters = model->parameters();
  at::Tensor sums = torch::empty({static_cast<std::int64_t>(parameters.size())}, at::kDouble);
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    sums[static_cast<std::int64_t>(k)] = parameters[k].detach().to(at::kDouble).sum().cpu();
  }
  at::Tensor low = sums.clone(), negated_high = -sums;
  comm.min(low);
  comm.min(negated_high);
  summary.replicas_identical = torch::equal(low, -negated_high);
  summary.parameter_checksum = sums.sum().item<double>();
  summary.finished = !stopped;
  summary.epochs_done = position.epoch;
  summary.steps = position.steps;
  summary.train_loss = last_loss;
  summary.train_seconds = train_seconds;
  summary.images_per_second = train_images / std::max(1e-9, train_seconds);
  if (evaluated) {
    summary.val_top1 = last_eval.top1;
    summary.val_top5 = last_eval.top5;
    summary.val_loss = last_eval.loss;
  }
  if (main_rank && !options.run_dir.empty()) {
    JsonRecord record;
    record.add("recipe", recipe.name)
        .add("finished", summary.finished)
        .add("epochs_done", summary.epochs_done)
        .add("steps", summary.steps)
        .add("world_size", info.world_size)
        .add("val_top1", summary.val_top1)
        .add("val_top5", summary.val_top5)
        .add("val_loss", summary.val_loss)
        .add("train_loss", summary.train_loss)
        .add("train_seconds", summary.train_seconds)
        .add("images_per_second", summary.images_per_second)
        .add("replicas_identical", summary.replicas_identical)
        .add("parameter_checksum", summary.parameter_checksum)
        .add("skipped_steps", step.scaler().skipped_steps());
    write_text_file(options.run_dir + "/summary.json", record.str() + "\n");
  }
  return summary;
}

}  // namespace ffcv::train
