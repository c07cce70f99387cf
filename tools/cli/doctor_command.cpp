// `ffcv doctor FILE`: runs the loader for a while, finds the stage that bounds throughput and
// says which settings help, in the spirit of FFCV's "Bottleneck Doctor" (docs/tuning.md).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "commands.hpp"
#include "common/arguments.hpp"
#include "common/trainer_exec.hpp"
#include "doctor_verdict.hpp"
#include "ffcv/util/available_memory.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/json_text.hpp"
#include "loader_arguments.hpp"
#include "loader_run.hpp"

namespace ffcv::tools {
namespace {

// The doctor's measurement: at least `batches_asked` batches (0: one epoch) and at least
// kDoctorMinSeconds, the file's epochs repeating as needed, summed into one measurement.
struct DoctorMeasurement {
  EpochMeasurement total;
  std::uint64_t epochs = 0;
};

void add_epoch(EpochMeasurement& total, const EpochMeasurement& m) {
  const double before = static_cast<double>(total.batches);
  const double weight = before + static_cast<double>(m.batches);
  const auto mean = [&](double a, double b) {
    return weight > 0 ? (a * before + b * static_cast<double>(m.batches)) / weight : 0.0;
  };
  total.diversity.mean_distinct_pages =
      mean(total.diversity.mean_distinct_pages, m.diversity.mean_distinct_pages);
  total.diversity.mean_distinct_page_fraction =
      mean(total.diversity.mean_distinct_page_fraction, m.diversity.mean_distinct_page_fraction);
  total.distinct_labels_per_batch =
      mean(total.distinct_labels_per_batch, m.distinct_labels_per_batch);
  total.batches += m.batches;
  total.samples += m.samples;
  total.seconds += m.seconds;
  total.samples_per_s = total.seconds > 0 ? static_cast<double>(total.samples) / total.seconds : 0;
  total.bytes_per_sample = m.bytes_per_sample;
  LoaderStats& s = total.stats;
  s.batches += m.stats.batches;
  s.samples += m.stats.samples;
  s.wall_seconds += m.stats.wall_seconds;
  s.read_wait_seconds += m.stats.read_wait_seconds;
  s.process_seconds += m.stats.process_seconds;
  s.process_cpu_seconds += m.stats.process_cpu_seconds;
  s.ring_full_seconds += m.stats.ring_full_seconds;
  s.consumer_wait_seconds += m.stats.consumer_wait_seconds;
  s.workers = m.stats.workers;
  s.skipped_samples += m.stats.skipped_samples;
  s.pages.bytes_read += m.stats.pages.bytes_read;
  s.pages.read_calls += m.stats.pages.read_calls;
  s.pages.storage_seconds += m.stats.pages.storage_seconds;
  s.pages.peak_resident_bytes =
      std::max(s.pages.peak_resident_bytes, m.stats.pages.peak_resident_bytes);
}

DoctorMeasurement measure(Loader& loader, std::uint64_t batches_asked, bool progress,
                          double step_seconds) {
  const std::uint64_t target = batches_asked > 0 ? batches_asked : loader.batches_per_epoch();
  DoctorMeasurement out;
  const auto enough = [&](std::uint64_t batches, double seconds) {
    return out.total.batches + batches >= target &&
           out.total.seconds + seconds >= kDoctorMinSeconds;
  };
  for (std::uint64_t epoch = 0;; ++epoch) {
    const EpochMeasurement m =
        run_epoch(loader, epoch, 0, progress && epoch == 0, step_seconds, enough);
    add_epoch(out.total, m);
    ++out.epochs;
    // An epoch that gave nothing (every sample skipped) would give nothing again.
    if (m.batches == 0 || enough(0, 0)) return out;
  }
}

LoaderFigures loader_figures(const Loader& loader, const DoctorMeasurement& m,
                             double step_seconds) {
  const LoaderStats& s = m.total.stats;
  LoaderFigures f;
  f.seconds = m.total.seconds;
  f.epoch_seconds = s.wall_seconds;
  f.batches = m.total.batches;
  f.epochs = m.epochs;
  f.batches_per_epoch = loader.batches_per_epoch();
  f.workers = s.workers;
  f.cores = available_cores();
  f.process_seconds = s.process_seconds;
  f.read_wait_seconds = s.read_wait_seconds;
  f.ring_full_seconds = s.ring_full_seconds;
  f.consumer_wait_seconds = s.consumer_wait_seconds;
  f.simulated_step = step_seconds > 0;
  f.file_size = loader.reader().file_size();
  f.available_memory = available_memory_bytes();
  f.random_order = loader.options().order.kind == OrderKind::kRandom;
  f.os_cache = loader.options().os_cache;
  return f;
}

// "measured: E epochs, B batches in S s" for the text report.
std::string measured_line(const DoctorMeasurement& m) {
  char text[200];
  std::snprintf(text, sizeof text, "  measured: %llu epoch%s, %llu batches in %.2f s\n",
                static_cast<unsigned long long>(m.epochs), m.epochs == 1 ? "" : "s (repeated)",
                static_cast<unsigned long long>(m.total.batches), m.total.seconds);
  return text;
}

}  // namespace

Arguments doctor_arguments() {
  Arguments args("doctor",
                 "Run the loader for a while, name the stage that bounds throughput (storage, "
                 "CPU, the consumer; with --device cuda the workers, the device stages' host "
                 "work or the GPU) and suggest the settings that help.");
  args.positional("FILE", "the .beton file: a path, or an http(s):// URL (see ffcv --help)");
  add_loader_arguments(args);
  args.option("batches", "N",
              "batches to measure at least (0: one epoch); at least 2 s are measured too, the "
              "file's epochs repeating as needed",
              "200")
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
  const DoctorMeasurement m = measure(loader, static_cast<std::uint64_t>(args.get_int("batches")),
                                      !args.get_flag("json"), step_seconds);
  const Diagnosis d = diagnose_loader(loader_figures(loader, m, step_seconds));
  if (args.get_flag("json")) {
    std::string measurement = measurements_json(loader, {m.total}, 0);
    measurement.insert(measurement.size() - 1,
                       ", \"measured_epochs\": " + std::to_string(m.epochs) +
                           ", \"measured_batches\": " + std::to_string(m.total.batches) +
                           ", \"measured_seconds\": " + json_number(m.total.seconds, 6));
    std::printf("%s\n", diagnosis_json(d.bottleneck, d.summary, d.advice, measurement).c_str());
    return 0;
  }
  std::string report = measurements_text(loader, {m.total}, 0);
  if (m.epochs > 1) {
    // One line for the epochs together.
    const std::string first = "  epoch 0: ";
    if (const std::size_t at = report.find(first); at != std::string::npos) {
      report.replace(at, first.size(), "  epochs 0-" + std::to_string(m.epochs - 1) + ": ");
    }
  }
  std::fputs(report.c_str(), stdout);
  std::fputs(measured_line(m).c_str(), stdout);
  print_diagnosis(d.summary, d.advice);
  return 0;
}

}  // namespace ffcv::tools
