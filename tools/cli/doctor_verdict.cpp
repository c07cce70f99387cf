#include "cli/doctor_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ffcv/util/json_text.hpp"

namespace ffcv::tools {
namespace {

std::string format(const char* pattern, double a, double b = 0) {
  char text[400];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}

// The consumer waited for data less than a tenth of the time.
Diagnosis consumer_bound(double consumer_waiting, double busy) {
  Diagnosis d;
  d.bottleneck = "consumer";
  d.summary = format(
      "the consumer bounds throughput: it waited for data only %.0f%% of the time; workers were "
      "busy %.0f%%",
      100 * consumer_waiting, 100 * busy);
  d.advice = {
      "the loader keeps up: speed up the training step (AMP, channels_last, a larger "
      "batch) or train several models per GPU on the same loader settings",
      "with spare CPU, move augmentation from the GPU to the loader's CPU pipeline"};
  return d;
}

// Batches waited for their pages a `reading` share of the time.
Diagnosis storage_bound(double reading, const LoaderFigures& f) {
  Diagnosis d;
  d.bottleneck = "storage";
  d.summary = format("storage bounds throughput: batches waited for their pages %.0f%% of the time",
                     100 * reading);
  if (f.file_size < f.available_memory / 2) {
    d.advice.push_back("the file (" + std::to_string(f.file_size >> 20) +
                       " MiB) fits in memory: use the OS cache (mmap, the default) so every "
                       "process shares one cached copy");
  } else {
    d.advice.push_back(
        "the file does not fit in memory: use the process cache "
        "(--os-cache false) with --order quasi_random so only a window of pages "
        "is resident");
  }
  if (f.random_order) {
    d.advice.push_back(
        "RANDOM order touches a new page for almost every sample: "
        "quasi_random reads each page once per epoch");
  }
  d.advice.push_back(
      "write smaller images (ffcv write --max-resolution) or JPEG at a lower "
      "--jpeg-quality: fewer bytes to read per sample");
  if (!f.os_cache) {
    d.advice.push_back(
        "raise --cache-readers (process cache reader threads) for high-latency "
        "storage");
  }
  return d;
}

std::string workers_of_cores(const LoaderFigures& f) {
  return std::to_string(f.workers) + " of " + std::to_string(f.cores) + " cores are used";
}

// The workers were busy a `busy` share of their time.
Diagnosis cpu_bound(double busy, const LoaderFigures& f) {
  Diagnosis d;
  d.bottleneck = "cpu";
  d.summary =
      format("decoding and augmentation bound throughput: workers were busy %.0f%% of their time",
             100 * busy);
  if (f.workers < f.cores) {
    d.advice.push_back("use more workers: " + workers_of_cores(f) + " (--num-workers 0 uses all)");
  }
  d.advice.push_back(
      "store part of the images raw (ffcv write --write-mode proportion "
      "--compress-probability P): raw pixels need no JPEG decoding");
  d.advice.push_back("write smaller images (--max-resolution): decoding cost grows with pixels");
  d.advice.push_back("move cheap per-pixel operations (normalize, convert) to the GPU stage");
  return d;
}

// Neither the consumer, storage nor the CPU: the consumer waited while the workers idled. What
// helps depends on why they idled: a full ring (a deeper one lets them run further ahead) or
// cores left unused (more workers); the figures rule out whichever did not happen.
Diagnosis workers_underused(double consumer_waiting, double busy, double ring_full,
                            const LoaderFigures& f) {
  Diagnosis d;
  d.bottleneck = "workers";
  d.summary = format(
      "the loader is under-used: the consumer waited %.0f%% of the time while workers were "
      "busy only %.0f%%",
      100 * consumer_waiting, 100 * busy);
  if (ring_full >= kRingFullShare) {
    d.advice.push_back(format(
        "raise --batches-ahead: every batch slot was held %.0f%% of the workers' time, so they "
        "could not run further ahead of the consumer",
        100 * ring_full));
  }
  if (f.workers < f.cores) {
    d.advice.push_back("raise --num-workers if other processes leave cores idle: " +
                       workers_of_cores(f));
  }
  if (d.advice.empty()) {
    d.advice.push_back(format(
        "no loader setting is indicated: the ring was full only %.0f%% of the workers' time "
        "and every core has a worker; the workers idled between batches (for a batch's pages to "
        "be prepared, or for the cores when other processes use them) or at the epochs' starts "
        "and ends, which weigh more the fewer batches an epoch has (%.0f here)",
        100 * ring_full, static_cast<double>(f.batches_per_epoch)));
  }
  return d;
}

}  // namespace

std::string measurement_too_short(std::uint64_t batches, double seconds) {
  if (batches >= kFewDoctorBatches && seconds >= kDoctorMinSeconds) return "";
  char text[200];
  std::snprintf(text, sizeof text, "%llu batch%s in %.2f s",
                static_cast<unsigned long long>(batches), batches == 1 ? "" : "es", seconds);
  char need[200];
  std::snprintf(need, sizeof need, "at least %llu batches and %.1f s",
                static_cast<unsigned long long>(kFewDoctorBatches), kDoctorMinSeconds);
  return std::string("only ") + text + (batches == 1 ? " was" : " were") +
         " measured, too few for a reliable diagnosis (it needs " + need + ")";
}

Diagnosis unsure_diagnosis(const Diagnosis& leaning, const std::string& reason,
                           const std::string& measure_longer) {
  Diagnosis d;
  d.bottleneck = "unsure";
  d.summary = "unsure: " + reason + "; the figures so far lean to: " + leaning.summary;
  d.advice = {measure_longer};
  return d;
}

Diagnosis diagnose_loader(const LoaderFigures& f) {
  const double seconds = std::max(1e-9, f.epoch_seconds > 0 ? f.epoch_seconds : f.seconds);
  const double worker_time = std::max(1e-9, f.workers * seconds);
  const double busy = std::min(1.0, f.process_seconds / worker_time);
  // Page reads are waited for by the one worker that prepares a batch while the others wait for
  // it, so their share of wall time (not of all workers' time, which many workers dilute) says
  // whether storage holds the loader back. Preparations may overlap: capped at 1.
  const double reading = std::min(1.0, f.read_wait_seconds / seconds);
  const double consumer_waiting = std::min(1.0, f.consumer_wait_seconds / seconds);
  const double ring_full = std::min(1.0, f.ring_full_seconds / worker_time);
  // The first share on the way to the verdict that lies too near its threshold to decide.
  std::string near;
  const auto decide = [&](double share, double threshold, const char* what, const char* choice) {
    if (near.empty() && std::abs(share - threshold) < kVerdictMargin) {
      char text[300];
      std::snprintf(text, sizeof text, "%s %.0f%%, within %.0f points of the %.0f%% %s", what,
                    100 * share, 100 * kVerdictMargin, 100 * threshold, choice);
      near = text;
    }
    return share;
  };
  Diagnosis d;
  if (f.simulated_step &&
      decide(consumer_waiting, kConsumerWaitShare, "the consumer waited for data",
             "below which the training step bounds throughput") < kConsumerWaitShare) {
    d = consumer_bound(consumer_waiting, busy);
  } else if (decide(reading, kReadingShare, "batches waited for their pages",
                    "above which storage bounds throughput") > kReadingShare) {
    d = storage_bound(reading, f);
  } else if (decide(busy, kBusyShare, "the workers were busy",
                    "that separates decoding-bound from under-used workers") > kBusyShare) {
    d = cpu_bound(busy, f);
  } else {
    d = workers_underused(consumer_waiting, busy, ring_full, f);
  }
  if (const std::string too_short = measurement_too_short(f.batches, f.seconds);
      !too_short.empty()) {
    return unsure_diagnosis(d, too_short,
                            "measure longer: a larger --batches (the file's epochs repeat as "
                            "needed)");
  }
  if (near.empty()) return d;
  // A longer measurement would not move the share: the advice of the verdict it leans to.
  Diagnosis unsure = unsure_diagnosis(d, near, "");
  unsure.advice = d.advice;
  return unsure;
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
