// The loader's options as command-line flags, shared by `ffcv bench` and `ffcv doctor`.
#pragma once

#include "arguments.hpp"
#include "ffcv/loader.hpp"

namespace ffcv::tools {

// Declares --batch-size, --workers, --order, --seed, --window-pages, --rank, --world-size,
// --batches-ahead, --keep-last, --process-cache, --cache-budget, --readers, --latency-ms,
// --bandwidth-mbs and --fields.
void add_loader_arguments(Arguments& args);

// Builds LoaderOptions from parsed arguments. Throws UsageError for bad values.
LoaderOptions loader_options(const Arguments& args);

// The outputs asked for with --fields (comma-separated field names), each with its default
// decoder; empty (all fields) when not given.
std::vector<PipelineSpec> field_pipelines(const Arguments& args);

}  // namespace ffcv::tools
