// The loader's options as command-line flags, shared by `ffcv bench` and `ffcv doctor`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/arguments.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/steps/op_params.hpp"

namespace ffcv::tools {

// The ranges of the flags that are not loader settings (those take their rules from the
// settings table, ffcv/settings/loader_settings.hpp). A batch of more than 2^20 samples is no
// plausible training batch; the ring's memory is also checked against the machine's before an
// epoch starts (check_loader_run in loader_run.hpp).
inline constexpr long long kMaxBatchSize = 1 << 20;
inline constexpr long long kMaxWorldSize = 1024;
inline constexpr long long kMaxImageSize = 8192;

// "num_workers" -> "num-workers": a setting's flag.
std::string setting_flag(std::string_view name);

// Declares --batch-size; one flag per loader setting (--num-workers, --order, --seed,
// --window-pages, --batches-ahead, --drop-last, --os-cache, --cache-budget-mib, ...), with the
// old spellings (--workers, --keep-last, --process-cache, --cache-budget SIZE, --readers,
// --latency-ms, --bandwidth-mbs) as aliases; --rank, --world-size; --fields; the image
// pipeline's --image-decoder, --image-size, --no-dct-scaling, --flip and --op; --op-library.
void add_loader_arguments(Arguments& args);

// The loader settings the flags give. Throws UsageError naming the flag for a bad value.
LoaderSettings loader_settings(const Arguments& args);

// Builds LoaderOptions from parsed arguments through the settings' one translation
// (ffcv::loader_options). Throws UsageError for bad values, an unknown order, or a --rank not
// below --world-size.
LoaderOptions loader_options(const Arguments& args);

// The outputs asked for with --fields (comma-separated field names), each with its default
// decoder; empty (all fields) when not given. The image output gets the decoder and operations
// the image flags ask for; the libraries of --op-library are loaded first, so their steps can be
// named there. An unknown decoder or operation, or bad parameters, throw UsageError.
std::vector<PipelineSpec> field_pipelines(const Arguments& args);
// The same for the GPU image path (`ffcv bench --image-decode gpu`): the image decoder is the
// encoded twin of --image-decoder (random_resized_crop or center_crop), which also draws
// --flip's mirror; --op is refused (operations need decoded pixels on the CPU).
std::vector<PipelineSpec> gpu_decode_pipelines(const Arguments& args);

// One --op value: NAME or NAME:key=value,key=value. A value is a list of numbers in brackets

}  // namespace ffcv::tools
