#include "cli/device_bench_command.hpp"

#include <torch/torch.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/loader_arguments.hpp"
#include "common/arguments.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/torch/device_transfer.hpp"
#include "ffcv/torch/gpu_image_decode.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::tools {
namespace {

struct EpochFigures {
  std::uint64_t epoch = 0, samples = 0, batches = 0;
  double seconds = 0;
};

// One stage per output: decode_crops for the image records of the GPU path, to_device for the
// rest. Returns the decode step too (null on the CPU path), for its counts.
std::vector<torch_adapter::DeviceStage> device_stages(
    const Loader& loader, int image_height, int image_width,
    std::shared_ptr<torch_adapter::DeviceOperation>& decode) {
  std::vector<torch_adapter::DeviceStage> stages;
  for (const auto& [name, state] : loader.outputs()) {
    if (name == "image" && state.shape.size() == 1 && decode == nullptr) {
      decode = torch_adapter::DeviceOpRegistry::global().make_operation(
          "decode_crops",
          OpParams({{"height", std::int64_t{image_height}}, {"width", std::int64_t{image_width}}}));
      stages.emplace_back(name, state,
                          std::vector<std::shared_ptr<torch_adapter::DeviceOperation>>{decode});
    } else {
      stages.emplace_back(name, state, std::vector<std::string>{"to_device"});
    }
  }
  return stages;
}

// The run's figures as one JSON object; `more` (", \"key\": value" pairs) goes in last.
std::string figures_json(const std::vector<EpochFigures>& epochs, const std::string& decode_mode,
                         const torch_adapter::GpuDecodeCounts& counts,
                         const std::string& more = "") {
  std::string out =
      "{\"device\": \"cuda\", \"image_decode\": " + json_quote(decode_mode) + ", \"epochs\": [";
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const EpochFigures& e = epochs[i];
    out += std::string(i ? ", " : "") + "{\"epoch\": " + std::to_string(e.epoch) +
           ", \"samples\": " + std::to_string(e.samples) +
           ", \"batches\": " + std::to_string(e.batches) +
           ", \"seconds\": " + json_number(e.seconds, 4) +
           ", \"samples_per_s\": " + json_number(e.samples / std::max(e.seconds, 1e-9), 4) + "}";
  }
  out += "]";
  if (!counts.backend.empty()) {
    out += ", \"gpu_decode\": {\"backend\": " + json_quote(counts.backend) +
           ", \"hardware_frames\": " + std::to_string(counts.hardware_frames) +
           ", \"hybrid_frames\": " + std::to_string(counts.hybrid_frames) +
           ", \"host_frames\": " + std::to_string(counts.host_frames) +
           ", \"pixel_records\": " + std::to_string(counts.pixel_records) +
           ", \"batches\": " + std::to_string(counts.batches) +
           ", \"host_seconds\": " + json_number(counts.host_seconds, 4) +
           ", \"nvjpeg_host_seconds\": " + json_number(counts.nvjpeg_host_seconds, 4) +
           ", \"records_seconds\": " + json_number(counts.records_seconds, 4) +
           ", \"nvjpeg_headers_seconds\": " + json_number(counts.nvjpeg_headers_seconds, 4) +
           ", \"nvjpeg_hardware_seconds\": " + json_number(counts.nvjpeg_hardware_seconds, 4) +
           ", \"nvjpeg_hybrid_seconds\": " + json_number(counts.nvjpeg_hybrid_seconds, 4) +
           ", \"decoder_start_seconds\": " + json_number(counts.decoder_start_seconds, 4) +
           ", \"nvjpeg_allocations\": " + std::to_string(counts.nvjpeg_allocations) +
           ", \"nvjpeg_reuses\": " + std::to_string(counts.nvjpeg_reuses) + "}";
  }
  return out + more + "}";
}

std::string bound_json(const torch_adapter::FeedBound& bound, const std::string& measurement = "") {
  return diagnosis_json(bound.bottleneck, bound.summary, bound.advice, measurement);
}

// The epochs of a device run: the loader's batches taken as a training loop takes them.
struct DeviceRun {
  std::vector<EpochFigures> epochs;
  torch_adapter::GpuDecodeCounts counts;
  torch_adapter::TransferTimings feed;  // over all epochs
  double seconds = 0;                   // the epochs' wall time, together
};

// `warmup_batches` > 0: an untimed first epoch of that many batches starts nvJPEG (about a
// second the first time in a process) and fills the pools before the measured epochs.
DeviceRun run_on_device(const Arguments& args, long long epochs, std::uint64_t max_batches,
                        bool print, std::uint64_t warmup_batches = 0) {
#ifndef FFCV_WITH_CUDA
  // DeviceTransfer is built with CUDA only (loader/CMakeLists.txt).
  (void)args, (void)epochs, (void)max_batches, (void)print, (void)warmup_batches;
  throw Error("--device cuda: this build has no CUDA (configured with FFCV_WITH_CUDA=OFF)");
#else
  if (!torch::cuda::is_available()) throw Error("--device cuda: no CUDA device is visible");
  const bool gpu_decode = args.get("image-decode") == "gpu";
  LoaderOptions options = loader_options(args);
  options.allocator = torch_adapter::pinned_allocator();
  Loader loader(args.get("FILE"), gpu_decode ? gpu_decode_pipelines(args) : field_pipelines(args),
                options);
  const int size = static_cast<int>(args.get_int("image-size"));
  std::shared_ptr<torch_adapter::DeviceOperation> decode;
  DeviceRun run;
  const auto one_epoch = [&](std::uint64_t epoch, std::uint64_t batches, bool measured) {
    EpochFigures figures;
    figures.epoch = epoch;
    std::vector<torch_adapter::DeviceStage> stages = device_stages(loader, size, size, decode);
    torch::cuda::synchronize();
    const Stopwatch started;
    {
      torch_adapter::DeviceTransfer transfer(loader.epoch(figures.epoch), 0, std::move(stages));
      while (batches == 0 || figures.batches < batches) {
        auto batch = transfer.next();
        if (!batch) break;
        figures.samples += static_cast<std::uint64_t>((*batch)[0].size(0));
        ++figures.batches;
      }
      torch::cuda::synchronize();
      if (measured) run.feed += transfer.timings();
    }
    figures.seconds = started.seconds();
    if (!measured) return;
    run.seconds += figures.seconds;
    run.epochs.push_back(figures);
    if (print) {
      std::printf("epoch %llu: %llu samples in %.3f s, %.0f samples/s on cuda (image decode %s)\n",
                  static_cast<unsigned long long>(figures.epoch),
                  static_cast<unsigned long long>(figures.samples), figures.seconds,
                  figures.samples / std::max(figures.seconds, 1e-9), gpu_decode ? "gpu" : "cpu");
    }
  };
  const std::uint64_t first = warmup_batches > 0 ? 1 : 0;
  if (warmup_batches > 0) one_epoch(0, warmup_batches, false);
  for (long long e = 0; e < epochs; ++e) one_epoch(first + std::uint64_t(e), max_batches, true);
  if (decode) run.counts = torch_adapter::gpu_decode_counts(*decode);
  return run;
#endif
}

void print_decode_counts(const torch_adapter::GpuDecodeCounts& counts) {
  if (counts.backend.empty()) return;
  const auto per_batch = [&](double seconds) {
    return 1e3 * seconds / std::max<double>(1, double(counts.batches));
  };
  std::printf(
      "GPU decode: %s; %llu JPEGs on the hardware engines, %llu on the hybrid backend, "
      "%llu on the host, %llu raw samples; decode_crops host time %.2f ms per batch "
      "(%.2f reading the records, %.2f in nvJPEG: %.2f headers, %.2f hardware, %.2f hybrid)\n",
      counts.backend.c_str(), static_cast<unsigned long long>(counts.hardware_frames),
      static_cast<unsigned long long>(counts.hybrid_frames),
      static_cast<unsigned long long>(counts.host_frames),
      static_cast<unsigned long long>(counts.pixel_records), per_batch(counts.host_seconds),
      per_batch(counts.records_seconds), per_batch(counts.nvjpeg_host_seconds),
      per_batch(counts.nvjpeg_headers_seconds), per_batch(counts.nvjpeg_hardware_seconds),
      per_batch(counts.nvjpeg_hybrid_seconds));
}

// The doctor diagnoses the steady state: nvJPEG's start is left to an untimed epoch.
constexpr std::uint64_t kDoctorWarmupBatches = 5;

}  // namespace

int device_bench_command(const std::vector<std::string>& argv) {
  Arguments args = bench_arguments();
  if (!args.parse(argv)) return 0;
  check_bench_device(args);
  const bool json = args.get_flag("json");
  const DeviceRun run = run_on_device(
      args, args.get_int("epochs"), static_cast<std::uint64_t>(args.get_int("max-batches")), !json);
  const torch_adapter::FeedBound bound = torch_adapter::feed_bound(run.feed, run.seconds);
  if (json) {
    std::printf("%s\n", figures_json(run.epochs, args.get("image-decode"), run.counts,
                                     ", \"feed\": " + bound_json(bound))
                            .c_str());
    return 0;
  }
  print_decode_counts(run.counts);
  std::printf("feed: %s\n", bound.summary.c_str());
  return 0;
}

int device_doctor_command(const std::vector<std::string>& argv) {
  Arguments args = doctor_arguments();
  if (!args.parse(argv)) return 0;
  check_bench_device(args);
  const bool json = args.get_flag("json");
  const DeviceRun run = run_on_device(args, 1, static_cast<std::uint64_t>(args.get_int("batches")),
                                      !json, kDoctorWarmupBatches);
  torch_adapter::FeedBound bound = torch_adapter::feed_bound(run.feed, run.seconds);
  const std::uint64_t batches = run.epochs.empty() ? 0 : run.epochs.front().batches;
  if (const std::string too_short = measurement_too_short(batches, run.seconds);
      !too_short.empty()) {
    const Diagnosis unsure =
        unsure_diagnosis({bound.bottleneck, bound.summary, bound.advice}, too_short,
                         "measure longer: a larger --batches, or a file of "
                         "more batches (one epoch is measured)");
    bound.bottleneck = unsure.bottleneck;
    bound.summary = unsure.summary;
    bound.advice = unsure.advice;
  }
  if (json) {
    std::printf(
        "%s\n",
        bound_json(bound, figures_json(run.epochs, args.get("image-decode"), run.counts)).c_str());
    return 0;
  }
  print_decode_counts(run.counts);
  print_diagnosis(bound.summary, bound.advice);
  return 0;
}

}  // namespace ffcv::tools
