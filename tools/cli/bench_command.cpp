// `ffcv bench FILE`: runs the loader over a .beton file and reports throughput and where the
// time went, per epoch, against a plain memcpy of the same bytes measured in the same run.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "arguments.hpp"
#include "commands.hpp"
#include "ffcv/json_text.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/progress_bar.hpp"
#include "loader_arguments.hpp"
#include "loader_run.hpp"

namespace ffcv::tools {

int bench_command(const CommandArgs& argv) {
  Arguments args("bench",
                 "Load a .beton file with the given loader settings and report samples/s, the "
                 "time per stage, and a memcpy of the same bytes measured in the same run.");
  args.positional("FILE", "the .beton file: a path, or an http(s):// URL");
  add_loader_arguments(args);
  args.option("epochs", "N", "epochs to run", "2")
      .int_range(1, kMaxEpochs)
      .option("max-batches", "N", "stop each epoch after N batches (0: whole epoch)", "0")
      .int_range(0, kMaxBatchesToRun)
      .flag("cold",
            "drop the file's pages from the OS page cache before each epoch, so that every "
            "epoch reads from storage")
      .flag("json", "print one JSON object");
  if (!args.parse(argv)) return 0;
  const LoaderOptions options = loader_options(args);
  Loader loader(args.get("FILE"), field_pipelines(args), options);
  check_loader_run(loader);
  const long long epochs = args.get_int("epochs");
  const auto max_batches = static_cast<std::uint64_t>(args.get_int("max-batches"));
  std::vector<EpochMeasurement> measured;
  for (long long epoch = 0; epoch < epochs; ++epoch) {
    if (args.get_flag("cold")) loader.drop_os_cache();
    measured.push_back(
        run_epoch(loader, static_cast<std::uint64_t>(epoch), max_batches, !args.get_flag("json")));
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
