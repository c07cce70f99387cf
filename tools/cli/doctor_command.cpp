// `ffcv doctor FILE`: runs the loader for a while, finds the stage that bounds throughput and
// says which settings help, in the spirit of FFCV's "Bottleneck Doctor" (docs/tuning.md).
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "commands.hpp"
#include "common/arguments.hpp"
#include "common/trainer_exec.hpp"
#include "ffcv/util/available_memory.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/json_text.hpp"
#include "loader_arguments.hpp"
#include "loader_run.hpp"

namespace ffcv::tools {
namespace {

struct Diagnosis {
  std::string bottleneck;  // "consumer", "storage", "cpu", "workers"
  std::string summary;
  std::vector<std::string> advice;
};

// The consumer waited for data less than a tenth of the time.
Diagnosis consumer_bound(double consumer_waiting, double busy) {
  char text[400];
  Diagnosis d;
  d.bottleneck = "consumer";
  std::snprintf(text, sizeof text,
                "the consumer bounds throughput: it waited for data only %.0f%% of the time; "
                "workers were busy %.0f%%",
                100 * consumer_waiting, 100 * busy);
  d.summary = text;
  d.advice = {
      "the loader keeps up: speed up the training step (AMP, channels_last, a larger "
      "batch) or train several models per GPU on the same loader settings",
      "with spare CPU, move augmentation from the GPU to the loader's CPU pipeline"};
  return d;
}

// Batches waited for their pages a `reading` share of the time.
Diagnosis storage_bound(double reading, std::uint64_t file_size, const LoaderOptions& options) {
  char text[400];
  Diagnosis d;
  d.bottleneck = "storage";
  std::snprintf(text, sizeof text,
                "storage bounds throughput: batches waited for their pages %.0f%% of the time",
                100 * reading);
  d.summary = text;
  if (file_size < available_memory_bytes() / 2) {
    d.advice.push_back("the file (" + std::to_string(file_size >> 20) +
                       " MiB) fits in memory: use the OS cache (mmap, the default) so every "
                       "process shares one cached copy");
  } else {
    d.advice.push_back(
        "the file does not fit in memory: use the process cache "
        "(--os-cache false) with --order quasi_random so only a window of pages "
        "is resident");
  }
  if (options.order.kind == OrderKind::kRandom) {
    d.advice.push_back(
        "RANDOM order touches a new page for almost every sample: "
        "quasi_random reads each page once per epoch");
  }
  d.advice.push_back(
      "write smaller images (ffcv write --max-resolution) or JPEG at a lower "
      "--jpeg-quality: fewer bytes to read per sample");
  if (!options.os_cache) {
    d.advice.push_back(
        "raise --cache-readers (process cache reader threads) for high-latency "
        "storage");
  }
  return d;
}

// The `workers` were busy a `busy` share of their time, on a machine of `cores` cores.
Diagnosis cpu_bound(double busy, int workers, unsigned cores) {
  char text[400];
  Diagnosis d;
  d.bottleneck = "cpu";
  std::snprintf(text, sizeof text,
                "decoding and augmentation bound throughput: workers were busy %.0f%% of their "
                "time",
                100 * busy);
  d.summary = text;
  if (static_cast<unsigned>(workers) < cores) {
    d.advice.push_back("use more workers: " + std::to_string(workers) + " of " +
                       std::to_string(cores) + " cores are used (--num-workers 0 uses all)");
  }
  d.advice.push_back(
      "store part of the images raw (ffcv write --write-mode proportion "
      "--compress-probability P): raw pixels need no JPEG decoding");
  d.advice.push_back(
      "write smaller images (--max-resolution): decoding cost grows with "
      "pixels");
  d.advice.push_back("move cheap per-pixel operations (normalize, convert) to the GPU stage");
  return d;
}

// Neither the consumer, storage nor the CPU: the loader has room to run further ahead.
Diagnosis workers_underused(double consumer_waiting, double busy) {
  char text[400];
  Diagnosis d;
  d.bottleneck = "workers";
  std::snprintf(text, sizeof text,
                "the loader is under-used: the consumer waited %.0f%% of the time while workers "
                "were busy only %.0f%%",
                100 * consumer_waiting, 100 * busy);
  d.summary = text;
  d.advice = {"raise --batches-ahead so workers can run further ahead of the consumer",
              "raise --num-workers if other processes leave cores idle"};
  return d;
}

Diagnosis diagnose(const Loader& loader, const EpochMeasurement& m, double step_seconds) {
  const LoaderStats& s = m.stats;
  const double worker_time = std::max(1e-9, s.workers * m.seconds);
  const double busy = s.process_seconds / worker_time;
  // Page reads are waited for by the one worker that prepares a batch while the others wait for
  // it, so their share of wall time (not of all workers' time, which many workers dilute) says
  // whether storage holds the loader back. Preparations may overlap: capped at 1.
  const double reading = std::min(1.0, s.read_wait_seconds / std::max(1e-9, m.seconds));
  const double consumer_waiting = s.consumer_wait_seconds / std::max(1e-9, m.seconds);
  const unsigned cores = static_cast<unsigned>(available_cores());
  const LoaderOptions& options = loader.options();
  const std::uint64_t file_size = loader.reader().file_size();
  Diagnosis d;
  if (step_seconds > 0 && consumer_waiting < 0.1) {
    d = consumer_bound(consumer_waiting, busy);
  } else if (reading > 0.2) {
    d = storage_bound(reading, file_size, options);
  } else if (busy > 0.7) {
    d = cpu_bound(busy, s.workers, cores);
  } else {
    d = workers_underused(consumer_waiting, busy);
  }
  if (const std::string warning = few_batches_warning(m.batches); !warning.empty()) {
    d.advice.insert(d.advice.begin(), warning);
  }
  return d;
}

}  // namespace

Arguments doctor_arguments() {
  Arguments args("doctor",
                 "Run the loader for a while, name the stage that bounds throughput (storage, "
                 "CPU, the consumer; with --device cuda the workers, the device stages' host "
                 "work or the GPU) and suggest the settings that help.");
  args.positional("FILE", "the .beton file: a path, or an http(s):// URL (see ffcv --help)");
  add_loader_arguments(args);
  args.option("batches", "N", "batches to run (0: one epoch)", "200")
      .int_range(0, kMaxBatchesToRun)
      .option("step-ms", "MS", "simulated training step per batch (0: none; CPU only)", "0")
      .real_range(0, kMaxStepMs)
      .flag("json", "print one JSON object");
  add_device_arguments(args);
  return args;
}

int doctor_command(const CommandArgs& argv) {
  Arguments args = doctor_arguments();
  if (!args.parse(argv)) return 0;
  check_bench_device(args);
  if (args.get("device") == "cuda") {
    if (args.get_double("step-ms") > 0) {
      throw UsageError("--step-ms simulates a step on the CPU: not with --device cuda");
    }
    // LibTorch lives in ffcv-train; it diagnoses the same arguments (device_bench_command.hpp).
    std::vector<std::string> forwarded{std::string(kDeviceDoctorEntry)};
    forwarded.insert(forwarded.end(), argv.begin(), argv.end());
    return run_trainer_command(forwarded);
  }
  const LoaderOptions options = loader_options(args);
  Loader loader(args.get("FILE"), field_pipelines(args), options);
  check_loader_run(loader);
  const double step_seconds = args.get_double("step-ms") / 1000.0;
  const EpochMeasurement m =
      run_epoch(loader, 0, static_cast<std::uint64_t>(args.get_int("batches")),
                !args.get_flag("json"), step_seconds);
  const Diagnosis d = diagnose(loader, m, step_seconds);
  if (args.get_flag("json")) {
    std::printf("%s\n",
                diagnosis_json(d.bottleneck, d.summary, d.advice, measurements_json(loader, {m}, 0))
                    .c_str());
    return 0;
  }
  std::fputs(measurements_text(loader, {m}, 0).c_str(), stdout);
  print_diagnosis(d.summary, d.advice);
  return 0;
}

std::string few_batches_warning(std::uint64_t batches) {
  if (batches >= kFewDoctorBatches) return "";
  return "only " + std::to_string(batches) + " batch" + (batches == 1 ? " was" : "es were") +
         " measured, too few for a reliable diagnosis: use more --batches, a larger file or a "
         "smaller --batch-size";
}

std::string diagnosis_json(const std::string& bottleneck, const std::string& summary,
                           const std::vector<std::string>& advice, const std::string& measurement) {
  std::string lines;
  for (const std::string& line : advice) lines += (lines.empty() ? "" : ", ") + json_quote(line);
  std::string out = "{\"bottleneck\": " + json_quote(bottleneck) +
                    ", \"summary\": " + json_quote(summary) + ", \"advice\": [" + lines + "]";
  if (!measurement.empty()) out += ", \"measurement\": " + measurement;
  return out + "}";
}

void print_diagnosis(const std::string& summary, const std::vector<std::string>& advice) {
  std::printf("\ndiagnosis: %s\n", summary.c_str());
  for (const std::string& line : advice) std::printf("  - %s\n", line.c_str());
}

}  // namespace ffcv::tools
