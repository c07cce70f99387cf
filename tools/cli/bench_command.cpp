// `ffcv bench FILE`: runs the loader over a .beton file and reports throughput and where the
// time went, per epoch, against a plain memcpy of the same bytes measured in the same run. Every
// figure is the epoch's own: the process cache counts its reads over the loader's life, so each
// epoch's storage figures are its totals less the previous epoch's.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "commands.hpp"
#include "common/arguments.hpp"
#include "common/trainer_exec.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/progress_bar.hpp"
#include "loader_arguments.hpp"
#include "loader_run.hpp"

namespace ffcv::tools {
namespace {

// `now` less `before`: the reads of one epoch from two running totals. The peak of the cache's
// memory is no sum and stays as it is (the highest so far).
PageSourceStats pages_since(const PageSourceStats& now, const PageSourceStats& before) {
  PageSourceStats epoch = now;
  epoch.bytes_read -= before.bytes_read;
  epoch.read_calls -= before.read_calls;
  epoch.pages_loaded -= before.pages_loaded;
  epoch.pages_freed -= before.pages_freed;
  epoch.acquire_wait_seconds -= before.acquire_wait_seconds;
  epoch.storage_seconds -= before.storage_seconds;
  return epoch;
}

}  // namespace

Arguments bench_arguments() {
  Arguments args("bench",
                 "Load a .beton file with the given loader settings and report, per epoch, "
                 "samples/s, the time per stage and the bytes read from storage (each epoch's "
                 "own), and a memcpy of the same bytes measured in the same run.");
  args.positional("FILE", "the .beton file: a path, or an http(s):// URL (see ffcv --help)");
  add_loader_arguments(args);
  args.option("epochs", "N", "epochs to run", "2")
      .int_range(1, kMaxEpochs)
      .option("max-batches", "N", "stop each epoch after N batches (0: whole epoch)", "0")
      .int_range(0, kMaxBatchesToRun)
      .flag("cold",
            "drop the file's pages from the OS page cache before each epoch, so that every "
            "epoch reads from storage")
      .flag("json", "print one JSON object");
  add_device_arguments(args);
  return args;
}

void add_device_arguments(Arguments& args) {
  args.option("device", "cpu|cuda",
              "cuda: batches go to the GPU as a training loop takes them (DeviceTransfer), "
              "timed to the GPU's end of each epoch; run by ffcv-train, which has LibTorch",
              "cpu")
      .option("image-decode", "cpu|gpu",
              "gpu (with --device cuda): the workers choose crop windows and keep the JPEG "
              "bytes, nvJPEG decodes on the GPU (decode_crops)",
              "cpu");
}

void check_bench_device(const Arguments& args) {
  const std::string device = args.get("device"), decode = args.get("image-decode");
  if (device != "cpu" && device != "cuda") {
    throw UsageError("--device takes cpu or cuda, not '" + device + "'");
  }
  if (decode != "cpu" && decode != "gpu") {
    throw UsageError("--image-decode takes cpu or gpu, not '" + decode + "'");
  }
  if (decode == "gpu" && device != "cuda") {
    throw UsageError("--image-decode gpu decodes on the GPU: give --device cuda too");
  }
}

int bench_command(const CommandArgs& argv) {
  Arguments args = bench_arguments();
  if (!args.parse(argv)) return 0;
  check_bench_device(args);
  if (args.get("device") == "cuda") {
    // LibTorch lives in ffcv-train; it runs the same arguments (device_bench_command.hpp).
    std::vector<std::string> forwarded{std::string(kDeviceBenchEntry)};
    forwarded.insert(forwarded.end(), argv.begin(), argv.end());
    return run_trainer_command(forwarded);
  }
  const LoaderOptions options = loader_options(args);
  Loader loader(args.get("FILE"), field_pipelines(args), options);
  check_loader_run(loader);
  const long long epochs = args.get_int("epochs");
  const auto max_batches = static_cast<std::uint64_t>(args.get_int("max-batches"));
  std::vector<EpochMeasurement> measured;
  PageSourceStats pages_so_far;
  for (long long epoch = 0; epoch < epochs; ++epoch) {
    if (args.get_flag("cold")) loader.drop_os_cache();
    measured.push_back(
        run_epoch(loader, static_cast<std::uint64_t>(epoch), max_batches, !args.get_flag("json")));
    PageSourceStats& pages = measured.back().stats.pages;
    const PageSourceStats running_total = pages;
    pages = pages_since(running_total, pages_so_far);
    pages_so_far = running_total;
  }
  const double memcpy_bytes_per_s = memcpy_rate(measured.back().bytes_per_sample);
  if (args.get_flag("json")) {
    std::printf("%s\n", measurements_json(loader, measured, memcpy_bytes_per_s).c_str());
  } else {
    std::fputs(measurements_text(loader, measured, memcpy_bytes_per_s).c_str(), stdout);
  }
  return 0;
}

}  // namespace ffcv::tools
