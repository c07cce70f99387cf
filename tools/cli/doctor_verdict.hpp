// What `ffcv doctor` concludes from what it measured, as a function of the figures alone, so that
// the same figures always give the same verdict and every piece of advice is one the figures
// allow (docs/tuning.md, the doctor's table):
//
//   unsure    the measurement was too short to trust (fewer than kFewDoctorBatches batches, or
//             under kDoctorMinSeconds): the summary says what the figures lean to, the advice
//             only how to measure longer; or a share that decides between two verdicts lies
//             within kVerdictMargin of its threshold, where the same command measures it either
//             side from run to run: the summary names the share, the advice is the leaning
//             verdict's;
//   consumer  with a simulated step, the consumer waited for data under kConsumerWaitShare of
//             the time;
//   storage   batches waited for their pages over kReadingShare of the time;
//   cpu       the workers were busy over kBusyShare of their time;
//   workers   the consumer waited while the workers were mostly idle.
//
// Advice the figures rule out is never given: more workers only while fewer workers than cores
// ran, a deeper ring (--batches-ahead) only when the ring was full a noticeable share of the
// workers' time (kRingFullShare), the process cache's readers only with the process cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ffcv::tools {

// A measurement shorter than either is too short for a verdict: a run of 0.2-0.3 s is mostly
// the epoch's start (threads, the first batch into an empty ring), and its shares swing.
inline constexpr double kDoctorMinSeconds = 2.0;
inline constexpr std::uint64_t kFewDoctorBatches = 10;
// The shares that separate the verdicts, and how near one may lie to its threshold and still
// decide.
inline constexpr double kConsumerWaitShare = 0.1;
inline constexpr double kReadingShare = 0.2;
inline constexpr double kBusyShare = 0.7;
inline constexpr double kVerdictMargin = 0.05;
// The share of the workers' time idle because every batch slot was held, from which a deeper
// ring may help.
inline constexpr double kRingFullShare = 0.05;

// What the doctor measured on the CPU, all epochs together (the loader's LoaderStats summed).
struct LoaderFigures {
  double seconds = 0;  // wall time of the measured batches
  // The epochs' own time, from each epoch's start (its workers starting) to its last batch
  // measured: the shares are of it. The time between the epochs the doctor repeats (ending one,
  // making the next) is the doctor's, not the loader's: on a busy machine it swings from run to
  // run. 0: `seconds`.
  double epoch_seconds = 0;
  std::uint64_t batches = 0;
  std::uint64_t epochs = 1;
  std::uint64_t batches_per_epoch = 0;  // of the file (or this rank's share)
  int workers = 0;
  int cores = 0;                       // the cores this process may run on
  double process_seconds = 0;          // workers processing samples, summed over workers
  double read_wait_seconds = 0;        // the preparing worker waiting for a batch's pages
  double ring_full_seconds = 0;        // workers idle because every slot was held, summed
  double consumer_wait_seconds = 0;    // the consumer waiting for batches
  bool simulated_step = false;         // --step-ms > 0
  std::uint64_t file_size = 0;         // bytes
  std::uint64_t available_memory = 0;  // bytes (MemAvailable, or the cgroup's limit)
  bool random_order = false;
  bool os_cache = true;
};

struct Diagnosis {
  std::string bottleneck;  // "unsure", "consumer", "storage", "cpu", "workers"
  std::string summary;
  std::vector<std::string> advice;
};

// The verdict and advice for `figures`.
Diagnosis diagnose_loader(const LoaderFigures& figures);

// Why a measurement of `batches` batches in `seconds` is too short for a verdict, or "" when it
// is long enough.
std::string measurement_too_short(std::uint64_t batches, double seconds);

// `leaning` (a verdict from a measurement too short to trust, `reason` from
// measurement_too_short) as an "unsure" verdict: its summary kept as what the figures lean to,
// its advice replaced by `measure_longer`.
Diagnosis unsure_diagnosis(const Diagnosis& leaning, const std::string& reason,
                           const std::string& measure_longer);

// The diagnosis as one JSON object (with "measurement" when given), and as lines of text: the
// doctor's output on the CPU and on the device.
std::string diagnosis_json(const std::string& bottleneck, const std::string& summary,
                           const std::vector<std::string>& advice,
                           const std::string& measurement = "");
void print_diagnosis(const std::string& summary, const std::vector<std::string>& advice);

}  // namespace ffcv::tools
