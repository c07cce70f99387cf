// Running the loader for measurement: shared by `ffcv bench` and `ffcv doctor`.
#pragma once

#include <string>
#include <vector>

#include "ffcv/loader.hpp"

namespace ffcv::tools {

struct EpochMeasurement {
  std::uint64_t epoch = 0;
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  double seconds = 0;
  double samples_per_s = 0;
  std::uint64_t bytes_per_sample = 0;  // output bytes of one sample, all outputs
  BatchDiversity diversity;            // distinct pages per batch of the epoch's order
  LoaderStats stats;
};

// Iterates one epoch (at most `max_batches` batches when non-zero), spending `step_seconds`
// per batch as a stand-in for a training step. Draws a progress bar when `progress`.
EpochMeasurement run_epoch(Loader& loader, std::uint64_t epoch, std::uint64_t max_batches,
                           bool progress, double step_seconds = 0);

// Single-thread memcpy throughput, in bytes/s, on buffers of 256 samples of `bytes_per_sample`.
double memcpy_rate(std::uint64_t bytes_per_sample);

std::string measurements_text(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s);
std::string measurements_json(const Loader& loader, const std::vector<EpochMeasurement>& epochs,
                              double memcpy_bytes_per_s);

}  // namespace ffcv::tools
