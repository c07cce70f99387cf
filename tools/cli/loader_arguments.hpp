// The loader's options as command-line flags, shared by `ffcv bench` and `ffcv doctor`.
#pragma once

#include <string>
#include <vector>

#include "arguments.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_params.hpp"

namespace ffcv::tools {

// The ranges of the loader's numeric flags. A batch of more than 2^20 samples is no plausible
// training batch; the ring's memory is also checked against the machine's before an epoch
// starts (check_loader_run in loader_run.hpp).
inline constexpr long long kMaxBatchSize = 1 << 20;
inline constexpr long long kMaxWindowPages = 1 << 20;
inline constexpr long long kMaxWorldSize = 1024;
inline constexpr long long kMaxBatchesAhead = 64;
inline constexpr unsigned long long kMinCacheBudget = 1ull << 20;
inline constexpr unsigned long long kMaxCacheBudget = 1ull << 40;
inline constexpr long long kMaxReaders = 256;
inline constexpr double kMaxLatencyMs = 60'000;        // a minute per read
inline constexpr double kMaxBandwidthMbs = 1'000'000;  // 1 TB/s
inline constexpr long long kMaxImageSize = 8192;

// Declares --batch-size, --workers, --order, --seed, --window-pages, --rank, --world-size,
// --batches-ahead, --keep-last, --process-cache, --cache-budget, --readers, --latency-ms,
// --bandwidth-mbs, --fields, the image pipeline's --image-decoder, --image-size,
// --no-dct-scaling, --flip and --op, and --op-library.
void add_loader_arguments(Arguments& args);

// Builds LoaderOptions from parsed arguments. Throws UsageError for bad values, an unknown order,
// or a --rank not below --world-size.
LoaderOptions loader_options(const Arguments& args);

// The outputs asked for with --fields (comma-separated field names), each with its default
// decoder; empty (all fields) when not given. The image output gets the decoder and operations
// the image flags ask for; the libraries of --op-library are loaded first, so their steps can be
// named there. An unknown decoder or operation, or bad parameters, throw UsageError.
std::vector<PipelineSpec> field_pipelines(const Arguments& args);

// One --op value: NAME or NAME:key=value,key=value. A value is a list of numbers in brackets

}  // namespace ffcv::tools
