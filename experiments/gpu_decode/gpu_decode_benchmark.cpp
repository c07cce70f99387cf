// The image pipeline of ImageNet training, from a .beton to normalised float16 NCHW batches on
// the GPU, on the CPU path or the GPU path, with a given number of loader workers:
//
//   ffcv_gpu_decode_benchmark DATA.beton --path cpu|gpu [--workers N] [--size 160]
//                             [--batch 512] [--batches 60] [--warmup 8] [--backend auto]
//
//   cpu: random_resized_crop + random_horizontal_flip on the workers; to_device, normalize and
//        to_torch_image on the copy stream (the trainer's CPU path)
//   gpu: random_resized_crop_encoded on the workers; decode_crops, normalize and to_torch_image
//        on the copy stream (ffcv/torch/gpu_image_decode.hpp)
//
// Batches are taken as a training loop takes them (DeviceTransfer, one batch ahead) and the
// device is synchronised at the end of the timed part. Prints one JSON line: images/s, the
// batches timed and, on the GPU path, which nvJPEG backend decoded how many images and the host
// time decode_crops took per batch (in nvJPEG's calls and in all). Pin the process with taskset
// to measure a number of host cores.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/torch/device_transfer.hpp"
#include "ffcv/torch/gpu_image_decode.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;
using Clock = std::chrono::steady_clock;

namespace {

struct Arguments {
  std::string data, path = "gpu", backend = "auto";
  int workers = 4, size = 160, batch = 512, batches = 60, warmup = 8;
};

Arguments parse(int argc, char** argv) {
  Arguments a;
  if (argc < 2) throw ConfigError("usage: ffcv_gpu_decode_benchmark DATA.beton --path cpu|gpu ...");
  a.data = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--path")
      a.path = value;
    else if (key == "--backend")
      a.backend = value;
    else if (key == "--workers")
      a.workers = std::stoi(value);
    else if (key == "--size")
      a.size = std::stoi(value);
    else if (key == "--batch")
      a.batch = std::stoi(value);
    else if (key == "--batches")
      a.batches = std::stoi(value);
    else if (key == "--warmup")
      a.warmup = std::stoi(value);
    else
      throw ConfigError("unknown option " + key);
  }
  if (a.path != "cpu" && a.path != "gpu") throw ConfigError("--path is cpu or gpu");
  return a;
}

const std::string kNormalize =
    "normalize:mean=[123.675,116.28,103.53],std=[58.395,57.12,57.375],dtype=float16";

}  // namespace

int main(int argc, char** argv) try {
  const Arguments args = parse(argc, argv);
  if (!torch::cuda::is_available()) throw ConfigError("no CUDA device is visible");
  const OpParams size({{"size", std::int64_t{args.size}}});
  PipelineSpec image{"image", "image", nullptr, {}};
  std::vector<std::string> image_steps;
  if (args.path == "cpu") {
    image.decoder = OpRegistry::global().make_decoder("random_resized_crop", size);
    image.operations = {OpRegistry::global().make_operation("random_horizontal_flip", {})};
    image_steps = {"to_device"};
  } else {
    OpParams encoded = size;
    encoded.set("flip", 0.5);
    image.decoder = OpRegistry::global().make_decoder("random_resized_crop_encoded", encoded);
    image_steps = {"decode_crops:size=" + std::to_string(args.size) + ",backend=" + args.backend};
  }
  image_steps.push_back(kNormalize);
  image_steps.push_back("to_torch_image:channels_last=true");
  LoaderOptions options;
  options.batch_size = static_cast<std::uint64_t>(args.batch);
  options.num_workers = args.workers;
  options.order.kind = OrderKind::kRandom;  // ffcv/order/traversal_order.hpp
  options.allocator = torch_adapter::pinned_allocator();
  Loader loader(args.data,
                {image, {"label", "label", OpRegistry::global().make_decoder("int", {}), {}}},
                options);
  std::vector<torch_adapter::DeviceStage> stages;
  std::shared_ptr<torch_adapter::DeviceOperation> decode;
  for (const auto& [name, state] : loader.outputs()) {
    if (name != "image") {
      stages.emplace_back(name, state, std::vector<std::string>{"to_device"});
      continue;
    }
    std::vector<std::shared_ptr<torch_adapter::DeviceOperation>> steps;
    for (const std::string& text : image_steps) {
      const OpSpec spec = parse_op_spec(text);
      steps.push_back(
          torch_adapter::DeviceOpRegistry::global().make_operation(spec.name, spec.params));
    }
    decode = steps.front();
    stages.emplace_back(name, state, steps);
  }
  int taken = 0;
  Clock::time_point start;
  torch_adapter::TransferTimings feed;  // the timed batches, over the epochs' transfers
  std::uint64_t images = 0;
  for (std::uint64_t epoch = 0; taken < args.warmup + args.batches; ++epoch) {
    torch_adapter::DeviceTransfer transfer(loader.epoch(epoch), 0, stages);
    torch_adapter::TransferTimings untimed;  // of this transfer, before the timed batches
    while (taken < args.warmup + args.batches) {
      auto batch = transfer.next();
      if (!batch) break;
      if (taken == args.warmup) {
        torch::cuda::synchronize();
        start = Clock::now();
        untimed = transfer.timings();
      }
      if (taken >= args.warmup) images += static_cast<std::uint64_t>((*batch)[0].size(0));
      ++taken;
    }
    torch::cuda::synchronize();
    if (taken > args.warmup) feed += transfer.timings().since(untimed);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const torch_adapter::GpuDecodeCounts counts = torch_adapter::gpu_decode_counts(*decode);
  std::printf(
      "{\"path\": \"%s\", \"workers\": %d, \"size\": %d, \"batch\": %d, \"images\": %llu, "
      "\"seconds\": %.4f, \"images_per_s\": %.1f, \"backend\": \"%s\", \"hardware_frames\": %llu, "
      "\"hybrid_frames\": %llu, \"host_frames\": %llu, \"pixel_records\": %llu, "
      "\"host_ms_per_batch\": %.3f, \"nvjpeg_host_ms_per_batch\": %.3f, "
      "\"records_ms_per_batch\": %.3f, \"nvjpeg_hardware_ms_per_batch\": %.3f, "
      "\"decoder_start_seconds\": %.3f, "
      "\"nvjpeg_allocations\": %llu, \"nvjpeg_reuses\": %llu, \"feed_loader_wait_ms\": %.3f, "
      "\"feed_stage_host_ms\": %.3f, \"feed_gpu_ms\": %.3f, \"feed_consumer_wait_ms\": %.3f, "
      "\"feed_bound\": \"%s\"}\n",
      args.path.c_str(), args.workers, args.size, args.batch,
      static_cast<unsigned long long>(images), seconds, images / seconds, counts.backend.c_str(),
      static_cast<unsigned long long>(counts.hardware_frames),
      static_cast<unsigned long long>(counts.hybrid_frames),
      static_cast<unsigned long long>(counts.host_frames),
      static_cast<unsigned long long>(counts.pixel_records),
      counts.batches > 0 ? 1e3 * counts.host_seconds / double(counts.batches) : 0.0,
      counts.batches > 0 ? 1e3 * counts.nvjpeg_host_seconds / double(counts.batches) : 0.0,
      counts.batches > 0 ? 1e3 * counts.records_seconds / double(counts.batches) : 0.0,
      counts.batches > 0 ? 1e3 * counts.nvjpeg_hardware_seconds / double(counts.batches) : 0.0,
      counts.decoder_start_seconds, static_cast<unsigned long long>(counts.nvjpeg_allocations),
      static_cast<unsigned long long>(counts.nvjpeg_reuses), feed.loader_wait_ms(),
      feed.stage_host_ms(), feed.gpu_ms(), feed.consumer_wait_ms(),
      torch_adapter::feed_bound(feed, seconds).bottleneck.c_str());
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "ffcv_gpu_decode_benchmark: %s\n", error.what());
  return 1;
}
