// The training step fed by the loader, against the same step fed by one fixed batch already on
// the training device (the ceiling with no data loading), at each resolution asked for.
//
//   ffcv_training_benchmark RECIPE.toml [--set k=v ...] [--resolutions 160,192]
//                           [--iterations 50] [--warmup 10] [--json OUT.json]
//
// Both runs use the recipe's model, precision, layout and batch size, and trainer/'s TrainStep,
// so they run exactly the trainer's step; the loader-fed run also pays for waiting on batches,
// their transfer and normalisation. ratio = loader-fed / fixed: 1.0 means the loader costs the
// step nothing. The waiting it also prints is host time in next(): the step never waits for the
// device, so the host may wait there while the GPU still runs queued work, and only the ratio
// says what the loader cost.
#include <torch/torch.h>
#ifdef FFCV_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/arguments.hpp"
#include "ffcv/torch/batch_feed.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/train/train_step.hpp"

using namespace ffcv;
using namespace ffcv::train;
using Clock = std::chrono::steady_clock;

namespace {

void synchronize(const at::Device& device, const StepResult& last) {
  if (device.is_cuda()) torch::cuda::synchronize();
  (void)last.loss.item<double>();
}

struct Measurement {
  int resolution = 0;
  double loader_fed = 0, fixed = 0;  // images/s
  double loader_wait_share = 0;      // of the loader-fed run's time
  // Waits of the timed iterations that began an epoch (a new epoch iterator and its first
  // batch): how many, and their mean. The rest of the wait is spread over the epochs.
  int epoch_starts = 0;
  double epoch_start_wait = 0;  // seconds, mean per epoch start
  double epoch_setup = 0;       // of which Loader::epoch() (order, pipelines, workers started)
  std::uint64_t batches_per_epoch = 0;
  // Where the timed batches' time went on the device feed (zeros on the CPU).
  torch_adapter::TransferTimings feed;
};

Measurement measure(const Recipe& recipe, int resolution, int warmup, int iterations,
                    at::Device device, Communicator& comm) {
  TrainStep step(recipe, device, comm);
  std::optional<BatchAllocator> allocator;
  if (device.is_cuda()) allocator = torch_adapter::pinned_allocator();
  TrainData data(recipe, ShardSpec{}, resolution, allocator);
  const InputNormalizer normalize(recipe.data.mean, recipe.data.std, device, step.input_dtype(),
                                  recipe.training.channels_last, recipe.data.interpolation);
  const double lr = recipe.lr.lr * 0.1;
  const double batch = recipe.training.batch_size;
  Measurement m;
  m.resolution = resolution;

  // Loader-fed: epochs follow one another as in training.
  std::uint64_t epoch = 0;
  auto feed = std::make_unique<torch_adapter::BatchFeed>(data.train().epoch(epoch), device,
                                                         normalize.stages(data.train()));
  ModelInput first;
  StepResult last;
  double wait = 0, start_wait = 0, setup = 0;
  Clock::time_point start;
  torch_adapter::TransferTimings feeds_done, feed_at_start;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) {
      synchronize(device, last);
      start = Clock::now();
      wait = 0;
      start_wait = 0;
      setup = 0;
      m.epoch_starts = 0;
      feed_at_start = feed->timings();
    }
    const auto wait_start = Clock::now();
    auto tensors = feed->next();
    bool new_epoch = false;
    double setup_seconds = 0;
    while (!tensors) {
      if (i >= warmup) feeds_done += feed->timings().since(feed_at_start);
      feed_at_start = {};
      feed.reset();  // its slots go back before the next epoch takes its own
      const auto setup_start = Clock::now();
      EpochIterator iterator = data.train().epoch(++epoch);
      setup_seconds += std::chrono::duration<double>(Clock::now() - setup_start).count();
      feed = std::make_unique<torch_adapter::BatchFeed>(std::move(iterator), device,
                                                        normalize.stages(data.train()));
      tensors = feed->next();
      new_epoch = true;
    }
    const double waited = std::chrono::duration<double>(Clock::now() - wait_start).count();
    wait += waited;
    if (new_epoch && i >= warmup) {
      start_wait += waited;
      setup += setup_seconds;
      ++m.epoch_starts;
    }
    const ModelInput input = normalize((*tensors)[0], (*tensors)[1]);
    if (i == 0) first = {input.images.clone(), input.labels.clone()};
    last = step(input, lr);
  }
  synchronize(device, last);
  const double fed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  m.loader_fed = iterations * batch / fed_seconds;
  m.loader_wait_share = wait / fed_seconds;
  m.epoch_start_wait = m.epoch_starts > 0 ? start_wait / m.epoch_starts : 0;
  m.epoch_setup = m.epoch_starts > 0 ? setup / m.epoch_starts : 0;
  m.batches_per_epoch = feed->num_batches();
  m.feed = feeds_done;
  m.feed += feed->timings().since(feed_at_start);
  feed.reset();

  // Fixed batch, already on the device.
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) {
      synchronize(device, last);
      start = Clock::now();
    }
    last = step(first, lr);
  }
  synchronize(device, last);
  m.fixed = iterations * batch / std::chrono::duration<double>(Clock::now() - start).count();
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  tools::Arguments args("training-benchmark",
                        "The trainer's step fed by the loader against a fixed batch on the "
                        "device.");
  args.positional("RECIPE", "recipe (model, data, precision, batch size)")
      .repeated_option("set", "SECTION.KEY=VALUE", "override a recipe key")
      .option("resolutions", "LIST", "training resolutions, comma-separated", "")
      .option("iterations", "N", "timed iterations per run", "50")
      .option("warmup", "N", "untimed iterations first", "10")
      .option("json", "OUT.json", "also write the figures as JSON")
      .option("step-stream", "default|pool",
              "the CUDA stream of the step: the default (legacy) stream or one of its own",
              "default");
  try {
    if (!args.parse(std::vector<std::string>(argv + 1, argv + argc))) return 0;
    const Recipe recipe = load_recipe(args.get("RECIPE"), args.get_all("set"));
    if (args.get("step-stream") != "default" && args.get("step-stream") != "pool") {
      throw tools::UsageError("--step-stream takes default or pool, not '" +
                              args.get("step-stream") + "'");
    }
    std::vector<int> resolutions;
    std::stringstream list(args.get("resolutions"));
    for (std::string item; std::getline(list, item, ',');) resolutions.push_back(std::stoi(item));
    if (resolutions.empty()) resolutions = {recipe.resolution.min_res, recipe.resolution.max_res};
    const int iterations = static_cast<int>(args.get_int("iterations"));
    const int warmup = static_cast<int>(args.get_int("warmup"));
    const at::Device device = torch::cuda::is_available() && recipe.training.device != "cpu"
                                  ? at::Device(at::kCUDA, 0)
                                  : at::Device(at::kCPU);
    if (recipe.training.threads > 0) torch::set_num_threads(recipe.training.threads);
    apply_cudnn_settings(recipe.training);
    Communicator comm(RankInfo{}, "gloo");
    std::printf("%s: %s x%g, %s, batch %d, %s, %d threads\n", recipe.name.c_str(),
                recipe.model.arch.c_str(), recipe.model.width, recipe.training.precision.c_str(),
                recipe.training.batch_size, device.str().c_str(), torch::get_num_threads());
    std::string json = "[";
    for (int resolution : resolutions) {
#ifdef FFCV_WITH_CUDA
      // --step-stream pool: the step runs on a stream of its own instead of the legacy default
      // stream, which every blocking stream and synchronous copy in the process waits for.
      std::optional<c10::cuda::CUDAStreamGuard> own_stream;
      if (device.is_cuda() && args.get("step-stream") == "pool") {
        own_stream.emplace(c10::cuda::getStreamFromPool(false, device.index()));
      }
#endif
      const Measurement m = measure(recipe, resolution, warmup, iterations, device, comm);
      std::printf(
          "  %3d px: loader-fed %8.1f img/s, fixed batch %8.1f img/s, ratio %.3f "
          "(waiting for batches %.1f%% of the time; %d epoch starts of %llu batches, "
          "%.1f ms each, %.1f ms of it setting up the epoch)\n",
          m.resolution, m.loader_fed, m.fixed, m.loader_fed / m.fixed, 100 * m.loader_wait_share,
          m.epoch_starts, static_cast<unsigned long long>(m.batches_per_epoch),
          1e3 * m.epoch_start_wait, 1e3 * m.epoch_setup);
      if (m.feed.batches > 0) {
        std::printf(
            "         per batch on the device feed: loader wait %.1f ms, host stage work %.1f ms, "
            "GPU after it %.1f ms, step waiting %.1f ms (step every %.1f ms; %d preparing "
            "threads)\n",
            m.feed.loader_wait_ms(), m.feed.stage_host_ms(), m.feed.gpu_ms(),
            m.feed.consumer_wait_ms(), 1e3 * recipe.training.batch_size / m.loader_fed,
            m.feed.preparers);
      }
      std::fflush(stdout);
      JsonRecord record;
      record.add("recipe", recipe.name)
          .add("arch", recipe.model.arch)
          .add("width", recipe.model.width)
          .add("device", device.str())
          .add("precision", recipe.training.precision)
          .add("batch_size", recipe.training.batch_size)
          .add("threads", torch::get_num_threads())
          .add("resolution", m.resolution)
          .add("loader_fed_images_per_second", m.loader_fed)
          .add("fixed_batch_images_per_second", m.fixed)
          .add("ratio", m.loader_fed / m.fixed)
          .add("loader_wait_share", m.loader_wait_share)
          .add("batches_per_epoch", m.batches_per_epoch)
          .add("epoch_starts", m.epoch_starts)
          .add("epoch_start_wait_seconds", m.epoch_start_wait)
          .add("epoch_setup_seconds", m.epoch_setup)
          .add("feed_batches", m.feed.batches)
          .add("feed_preparing_threads", m.feed.preparers)
          .add("feed_loader_wait_ms", m.feed.loader_wait_ms())
          .add("feed_stage_host_ms", m.feed.stage_host_ms())
          .add("feed_gpu_ms", m.feed.gpu_ms())
          .add("feed_consumer_wait_ms", m.feed.consumer_wait_ms());
      json += (json.size() > 1 ? ",\n " : "") + record.str();
    }
    if (args.has("json")) write_text_file(args.get("json"), json + "]\n");
    return 0;
  } catch (const tools::UsageError& e) {
    std::fprintf(stderr, "usage error: %s\n%s", e.what(), args.help().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
