#include "loader_arguments.hpp"

#include <sstream>

#include "ffcv/errors.hpp"
#include "ffcv/steps/op_library.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/storage/range_reader.hpp"

namespace ffcv::tools {

void add_loader_arguments(Arguments& args) {
  args.option("batch-size", "N", "samples per batch", "256")
      .int_range(1, kMaxBatchSize)
      .option("workers", "N", "worker threads (0: all cores)", "0")
      .int_range(0, kMaxThreads)
      .option("order", "KIND", "sequential | random | quasi_random", "sequential")
      .option("seed", "N", "seed of the order and of random operations", "0")
      .int_range(0, kMaxSeed)
      .option("window-pages", "N", "QUASI_RANDOM pages open at once (0: 2 x batch size)", "0")
      .int_range(0, kMaxWindowPages)
      .option("rank", "R", "this process's rank (below --world-size)", "0")
      .int_range(0, kMaxWorldSize - 1)
      .option("world-size", "W", "number of ranks sharing each epoch", "1")
      .int_range(1, kMaxWorldSize)
      .option("batches-ahead", "N", "batches prepared ahead of the consumer", "3")
      .int_range(0, kMaxBatchesAhead)
      .flag("keep-last", "keep the last partial batch (drop_last = false)")
      .option("on-error", "fail|skip",
              "a sample that fails to decode: stop, or leave it out (at most "
              "--max-skipped-fraction of an epoch)",
              "fail")
      .option("max-skipped-fraction", "F", "with --on-error skip: the share that may fail", "0.01")
      .real_range(0, 1)
      .flag("process-cache",
            "read pages into the process's own cache instead of mmap (always, for a URL)")
      .option("cache-budget", "SIZE", "process cache memory budget", "1G")
      .size_range(kMinCacheBudget, kMaxCacheBudget)
      .option("readers", "N", "process cache reader threads", "4")
      .int_range(1, kMaxReaders)
      .option("latency-ms", "MS", "simulated storage latency per read (process cache)", "0")
      .real_range(0, kMaxLatencyMs)
      .option("bandwidth-mbs", "MB/S", "simulated storage bandwidth (process cache; 0: unlimited)",
              "0")
      .real_range(0, kMaxBandwidthMbs)
      .option("fields", "A,B", "load only these fields [default: all]")
      .option("image-decoder", "NAME",
              "decoder of the image field: image | random_resized_crop | center_crop")
      .option("image-size", "PX", "output size of a cropping image decoder", "224")
      .int_range(1, kMaxImageSize)
      .flag("no-dct-scaling", "cropping decoders decode at full scale (FFCV's pixels)")
      .flag("flip", "add random_horizontal_flip after the image decoder")
      .repeated_option("op", "NAME[:K=V,..]",
                       "append an operation to the image pipeline (repeatable)")
      .repeated_option("op-library", "PATH",
                       "load user operations from a shared library (repeatable)");
}

LoaderOptions loader_options(const Arguments& args) {
  LoaderOptions options;
  options.batch_size = static_cast<std::uint64_t>(args.get_int("batch-size"));
  options.num_workers = static_cast<int>(args.get_int("workers"));
  try {
    options.order.kind = parse_order_kind(args.get("order"));
  } catch (const ConfigError& error) {
    throw UsageError(std::string("--order: ") + error.what());
  }
  options.order.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  options.order.window_pages = static_cast<std::uint64_t>(args.get_int("window-pages"));
  options.order.world_size = static_cast<std::uint32_t>(args.get_int("world-size"));
  options.order.rank = static_cast<std::uint32_t>(args.get_int("rank"));
  if (options.order.rank >= options.order.world_size) {
    throw UsageError("--rank must be between 0 and " +
                     std::to_string(options.order.world_size - 1) + " (below --world-size " +
                     std::to_string(options.order.world_size) + "), got " + args.get("rank"));
  }
  options.batches_ahead = static_cast<std::uint64_t>(args.get_int("batches-ahead"));
  options.drop_last = !args.get_flag("keep-last");
  try {
    options.on_error = parse_on_sample_error(args.get("on-error"));
  } catch (const ConfigError& error) {
    throw UsageError(std::string("--on-error: ") + error.what());
  }
  options.max_skipped_fraction = args.get_double("max-skipped-fraction");
  // A URL is always read through the process cache: nothing can map a file on another machine.
  options.os_cache = !args.get_flag("process-cache") && !is_url(args.get("FILE"));
  options.cache.budget_bytes = args.get_size("cache-budget");
  options.cache.reader_threads = static_cast<int>(args.get_int("readers"));
  options.cache.throttle.latency_seconds = args.get_double("latency-ms") / 1000.0;
  options.cache.throttle.bandwidth_bytes_per_s = args.get_double("bandwidth-mbs") * 1e6;
  options.default_pipelines = !args.has("fields");
  return options;
}

std::vector<PipelineSpec> field_pipelines(const Arguments& args) {
  for (const std::string& library : args.get_all("op-library")) load_op_library(library);
  std::vector<PipelineSpec> pipelines;
  if (args.has("fields")) {
    std::stringstream list(args.get("fields"));
    std::string field;
    while (std::getline(list, field, ',')) {
      if (!field.empty()) pipelines.push_back({field, field, nullptr, {}});
    }
    if (pipelines.empty()) throw UsageError("--fields lists no field");
  }
  const std::vector<std::string> extra_ops = args.get_all("op");
  if (!args.has("image-decoder") && !args.get_flag("flip") && extra_ops.empty()) return pipelines;
  PipelineSpec image{"image", "image", nullptr, {}};
  if (args.has("image-decoder")) {
    const std::string name = args.get("image-decoder");
    OpParams params;
    if (name != "image") {
      params.set("size", static_cast<std::int64_t>(args.get_int("image-size")));
      params.set("dct_scaling", !args.get_flag("no-dct-scaling"));
    }
    try {
      image.decoder = OpRegistry::global().make_decoder(name, params);
    } catch (const ConfigError& error) {
      throw UsageError(std::string("--image-decoder: ") + error.what());
    }
  }
  if (args.get_flag("flip")) {
    image.operations.push_back(OpRegistry::global().make_operation("random_horizontal_flip", {}));
  }
  for (const std::string& text : extra_ops) {
    OpSpec op;
    try {
      op = parse_op_spec(text);
    } catch (const ConfigError& error) {
      throw UsageError(std::string("--op ") + error.what());
    }
    try {
      image.operations.push_back(OpRegistry::global().make_operation(op.name, op.params));
    } catch (const ConfigError& error) {
      throw UsageError(std::string("--op ") + text + ": " + error.what());
    }
  }
  bool replaced = false;
  for (PipelineSpec& spec : pipelines) {
    if (spec.field == "image") {
      spec = image;
      replaced = true;
    }
  }
  if (!replaced) pipelines.insert(pipelines.begin(), image);
  return pipelines;
}

}  // namespace ffcv::tools
