// Running the loader for measurement: shared by `ffcv bench` and `ffcv doctor`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ffcv/loader.hpp"

namespace ffcv::tools {

// Ranges of the measuring commands' own flags: bench's --epochs, bench's --max-batches and
// doctor's --batches, doctor's --step-ms.
inline constexpr long long kMaxEpochs = 100'000;
inline constexpr long long kMaxBatchesToRun = 1'000'000'000;
inline constexpr double kMaxStepMs = 60'000;

struct EpochMeasurement {
  std::uint64_t epoch = 0;
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  double seconds = 0;
  double samples_per_s = 0;
  std::uint64_t bytes_per_sample = 0;  // output bytes of one sample, all outputs (ragged
                                       // ones: the epoch's mean)
  BatchDiversity diversity;            // distinct pages per batch of the epoch's order
  // Mean distinct values of the output named "label" per batch (an integer scalar per sample),
  // 0 when there is no such output: how well the order mixes classes.
  double distinct_labels_per_batch = 0;
  LoaderStats stats;
};

// Refuses, before an epoch starts, a run that would load nothing or could not allocate its
// batches: fewer samples (on this rank) than one batch with drop_last (UsageError naming the
// file, the sample count and the flags that help), a file or rank with no samples (Error), or a
// ring of batch_size x bytes per sample x (batches_ahead + 2) bytes beyond the memory available
// to the process (UsageError naming the sizes).
void check_loader_run(const Loader& loader);

// Iterates one epoch (at most `max_batches` batches when non-zero), spending `step_seconds`
// per batch as a stand-in for a training step. Draws a progress bar when `progress`. With
// `enough`, stops as soon as it returns true for the batches and seconds measured so far.
EpochMeasurement run_epoch(Loader& loader, std::uint64_t epoch, std::uint64_t max_batches,
                           bool progress, double step_seconds = 0,
                           const std::function<bool(std::uint64_t, double)>& enough = {});

// Single-thread memcpy throughput, in bytes/s, on buffers of 256 samples of `bytes_per_sample`.
double memcpy_rate(std::uint64_t bytes_per_sample);

std::string measurements_text(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s);
std::string measurements_json(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s);

}  // namespace ffcv::tools
