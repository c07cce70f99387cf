#include "loader_arguments.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <variant>

#include "ffcv/steps/op_library.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {

std::string setting_flag(std::string_view name) {
  std::string flag(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

namespace {

// One flag per loader setting, in the table's order, with its rule as the flag's range.
void add_setting_flags(Arguments& args) {
  LoaderSettings defaults;
  for (const SettingRow& row : loader_setting_rows(defaults)) {
    args.option(setting_flag(row.name), setting_value_name(row), std::string(row.doc),
                setting_text(row.slot));
    const bool bounded = row.rule.min != -std::numeric_limits<double>::infinity() ||
                         row.rule.max != std::numeric_limits<double>::infinity();
    if (std::holds_alternative<double*>(row.slot) && bounded) {
      args.real_range(row.rule.min, row.rule.max);
    } else if (std::holds_alternative<int*>(row.slot) && bounded) {
      args.int_range(static_cast<long long>(row.rule.min), static_cast<long long>(row.rule.max));
    } else if (std::holds_alternative<std::uint64_t*>(row.slot)) {
      args.int_range(0, kMaxSeed);
    }
  }
  for (const SettingAlias& alias : loader_setting_aliases()) {
    args.alias(setting_flag(alias.old_name), setting_flag(alias.name),
               alias.value == SettingAlias::Value::kNegatedFlag,
               [&alias](const std::string& value) { return alias_value(alias, value); });
  }
}

}  // namespace

void add_loader_arguments(Arguments& args) {
  args.option("batch-size", "N", "samples per batch", "256").int_range(1, kMaxBatchSize);
  add_setting_flags(args);
  args.option("rank", "R", "this process's rank (below --world-size)", "0")
      .int_range(0, kMaxWorldSize - 1)
      .option("world-size", "W", "number of ranks sharing each epoch", "1")
      .int_range(1, kMaxWorldSize)
      .option("fields", "A,B", "load only these fields [default: all]")
      .option("image-decoder", "NAME",
              "decoder of the image field: image | random_resized_crop | center_crop")
      .option("image-size", "PX", "output size of a cropping image decoder", "224")
      .int_range(1, kMaxImageSize)
      .flag("no-dct-scaling", "cropping decoders decode at full scale (FFCV's pixels)")
      .flag("flip", "add random_horizontal_flip after the image decoder")
      .repeated_option("op", "NAME[:K=V,..]",
                       "append an operation to the image pipeline (repeatable)")
      .repeated_option("op-library", "PATH",
                       "load user operations from a shared library (repeatable)");
}

LoaderSettings loader_settings(const Arguments& args) {
  LoaderSettings settings;
  for (const SettingRow& row : loader_setting_rows(settings)) {
    const std::string flag = setting_flag(row.name);
    try {
      set_setting(row, args.get(flag));
    } catch (const ConfigError& error) {
      throw UsageError("--" + flag + ": " + error.what());
    }
  }
  return settings;
}

LoaderOptions loader_options(const Arguments& args) {
  LoaderPlace place;
  place.location = args.get("FILE");
  place.batch_size = static_cast<std::uint64_t>(args.get_int("batch-size"));
  place.world_size = static_cast<std::uint32_t>(args.get_int("world-size"));
  place.rank = static_cast<std::uint32_t>(args.get_int("rank"));
  if (place.rank >= place.world_size) {
    throw UsageError("--rank must be between 0 and " + std::to_string(place.world_size - 1) +
                     " (below --world-size " + std::to_string(place.world_size) + "), got " +
                     args.get("rank"));
  }
  LoaderOptions options = loader_options(loader_settings(args), place);
  options.default_pipelines = !args.has("fields");
  return options;
}

std::vector<PipelineSpec> field_pipelines(const Arguments& args) {
  for (const std::string& library : args.get_all("op-library")) load_op_library(library);
  std::vector<PipelineSpec> pipelines;
  if (args.has("fields")) {
    std::stringstream list(args.get("fields"));
    std::string field;
    while (std::getline(list, field, ',')) {
      if (!field.empty()) pipelines.push_back({field, field, nullptr, {}});
    }
    if (pipelines.empty()) throw UsageError("--fields lists no field");
  }
  const std::vector<std::string> extra_ops = args.get_all("op");
  if (!args.has("image-decoder") && !args.get_flag("flip") && extra_ops.empty()) return pipelines;
  PipelineSpec image{"image", "image", nullptr, {}};
  if (args.has("image-decoder")) {
    const std::string name = args.get("image-decoder");
    OpParams params;
    if (name != "image") {
      params.set("size", static_cast<std::int64_t>(args.get_int("image-size")));
      params.set("dct_scaling", !args.get_flag("no-dct-scaling"));
    }
    try {
      image.decoder = OpRegistry::global().make_decoder(name, params);
    } catch (const ConfigError& error) {
      throw UsageError(std::string("--image-decoder: ") + error.what());
    }
  }
  if (args.get_flag("flip")) {
    image.operations.push_back(OpRegistry::global().make_operation("random_horizontal_flip", {}));
  }
  for (const std::string& text : extra_ops) {
    OpSpec op;
    try {
      op = parse_op_spec(text);
    } catch (const ConfigError& error) {
      throw UsageError(std::string("--op ") + error.what());
    }
    try {
      image.operations.push_back(OpRegistry::global().make_operation(op.name, op.params));
    } catch (const ConfigError& error) {
      throw UsageError(std::string("--op ") + text + ": " + error.what());
    }
  }
  bool replaced = false;
  for (PipelineSpec& spec : pipelines) {
    if (spec.field == "image") {
      spec = image;
      replaced = true;
    }
  }
  if (!replaced) pipelines.insert(pipelines.begin(), image);
  return pipelines;
}

std::vector<PipelineSpec> gpu_decode_pipelines(const Arguments& args) {
  const std::string name = args.has("image-decoder") ? args.get("image-decoder") : "";
  if (name != "random_resized_crop" && name != "center_crop") {
    throw UsageError("--image-decode gpu needs --image-decoder random_resized_crop or center_crop");
  }
  if (!args.get_all("op").empty()) {
    throw UsageError("--image-decode gpu takes no --op: operations run on decoded pixels");
  }
  std::vector<PipelineSpec> pipelines = field_pipelines(args);
  OpParams params;
  params.set("size", static_cast<std::int64_t>(args.get_int("image-size")));
  params.set("flip", args.get_flag("flip") ? 0.5 : 0.0);
  for (PipelineSpec& spec : pipelines) {
    if (spec.field != "image") continue;
    spec.decoder = OpRegistry::global().make_decoder(name + "_encoded", params);
    spec.operations.clear();  // the flip is drawn inside the encoded decoder
  }
  return pipelines;
}

}  // namespace ffcv::tools
