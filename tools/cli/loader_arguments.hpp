// The loader's options as command-line flags, shared by `ffcv bench` and `ffcv doctor`.
#pragma once

#include <string>
#include <vector>

#include "arguments.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/op_params.hpp"

namespace ffcv::tools {

// Declares --batch-size, --workers, --order, --seed, --window-pages, --rank, --world-size,
// --batches-ahead, --keep-last, --process-cache, --cache-budget, --readers, --latency-ms,
// --bandwidth-mbs, --fields, the image pipeline's --image-decoder, --image-size,
// --no-dct-scaling, --flip and --op, and --op-library.
void add_loader_arguments(Arguments& args);

// Builds LoaderOptions from parsed arguments. Throws UsageError for bad values.
LoaderOptions loader_options(const Arguments& args);

// The outputs asked for with --fields (comma-separated field names), each with its default
// decoder; empty (all fields) when not given. The image output gets the decoder and operations
// the image flags ask for; the libraries of --op-library are loaded first, so their steps can be
// named there.
std::vector<PipelineSpec> field_pipelines(const Arguments& args);

// One --op value: NAME or NAME:key=value,key=value. A value is a list of numbers in brackets

}  // namespace ffcv::tools
