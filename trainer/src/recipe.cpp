#include "ffcv/train/recipe.hpp"

#include <string_view>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/recipe_schema.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::train {
namespace {

// Every key of every section, in documentation order, with its rule: the one table from which
// the recipe is read, overridden, written back and listed.
RecipeSchema recipe_schema(Recipe& r) {
  RecipeSchema schema;
  const auto visit = [&](std::string_view section, std::string_view key, auto& member, Rule rule) {
    schema.push_back({section, key, &member, std::move(rule)});
  };
  visit("data", "train", r.data.train, any());
  visit("data", "val", r.data.val, any());
  visit("data", "image_field", r.data.image_field, non_empty());
  visit("data", "label_field", r.data.label_field, non_empty());
  add_loader_settings(schema, "data", r.data);
  visit("data", "mean", r.data.mean, between(0, 255));
  visit("data", "std", r.data.std, above(0));
  visit("data", "interpolation", r.data.interpolation, one_of({"area", "linear"}));
  visit("data", "fast_dct", r.data.fast_dct, any());
  visit("data", "image_decode", r.data.image_decode, one_of({"cpu", "gpu", "auto"}));
  visit("data", "op_libraries", r.data.op_libraries, non_empty());

  visit("augment", "scale", r.augment.scale, ordered(between(0, 1, true)));
  visit("augment", "ratio", r.augment.ratio, ordered(above(0)));
  visit("augment", "flip", r.augment.flip, any());
  visit("augment", "operations", r.augment.operations, non_empty());
  visit("augment", "mixup_alpha", r.augment.mixup_alpha, at_least(0));
  visit("augment", "mixup_same_lambda", r.augment.mixup_same_lambda, any());

  visit("model", "arch", r.model.arch, one_of({"resnet18", "resnet50"}));
  visit("model", "width", r.model.width, above(0));
  visit("model", "stem", r.model.stem, one_of({"imagenet", "small", "small_strided"}));
  visit("model", "blurpool", r.model.blurpool, any());
  visit("model", "num_classes", r.model.num_classes, at_least(2));

  visit("resolution", "min_res", r.resolution.min_res, at_least(1));
  visit("resolution", "max_res", r.resolution.max_res, at_least(1));
  visit("resolution", "start_ramp", r.resolution.start_ramp, at_least(0));
  visit("resolution", "end_ramp", r.resolution.end_ramp, at_least(0));
  visit("resolution", "round_to", r.resolution.round_to, at_least(1));

  visit("lr", "schedule", r.lr.schedule, one_of({"triangular", "step"}));
  visit("lr", "lr", r.lr.lr, above(0));
  visit("lr", "peak_epoch", r.lr.peak_epoch, at_least(0));
  visit("lr", "start_factor", r.lr.start_factor, between(0, 1));
  visit("lr", "step_ratio", r.lr.step_ratio, above(0));
  visit("lr", "step_length", r.lr.step_length, at_least(1));

  visit("training", "epochs", r.training.epochs, at_least(1));
  visit("training", "batch_size", r.training.batch_size, at_least(1));
  visit("training", "momentum", r.training.momentum, between(0, 1, false, true));
  visit("training", "weight_decay", r.training.weight_decay, at_least(0));
  visit("training", "wd_exclude", r.training.wd_exclude, any());
  visit("training", "label_smoothing", r.training.label_smoothing, between(0, 1));
  visit("training", "precision", r.training.precision, one_of({"fp32", "fp16", "bf16"}));
  visit("training", "channels_last", r.training.channels_last, any());
  visit("training", "cudnn_benchmark", r.training.cudnn_benchmark, any());
  visit("training", "deterministic", r.training.deterministic, any());
  visit("training", "device", r.training.device, one_of({"auto", "cpu", "cuda"}));
  visit("training", "threads", r.training.threads, at_least(0));

  visit("validation", "batch_size", r.validation.batch_size, at_least(1));
  visit("validation", "resolution", r.validation.resolution, at_least(1));
  visit("validation", "crop_ratio", r.validation.crop_ratio, between(0, 1, true));
  visit("validation", "tta", r.validation.tta, any());
  visit("validation", "every", r.validation.every, at_least(0));

  visit("logging", "folder", r.logging.folder, non_empty());
  visit("logging", "progress", r.logging.progress, one_of({"auto", "always", "never"}));

  visit("dist", "world_size", r.dist.world_size, at_least(1));
  visit("dist", "backend", r.dist.backend, one_of({"auto", "nccl", "gloo"}));
  visit("dist", "address", r.dist.address, non_empty());
  visit("dist", "port", r.dist.port, between(1, 65535));

  visit("checkpoint", "every", r.checkpoint.every, at_least(0));
  visit("checkpoint", "resume", r.checkpoint.resume, any());
  return schema;
}

// Rules that involve more than one key; checked once every override has been applied.
void check_consistency(const Recipe& recipe, const std::string& path) {
  const std::string prefix = path + ": ";
  if (recipe.data.train.empty()) {
    throw ConfigError(prefix +
                      "data.train is required (the training set's .beton path; "
                      "set it in [data] or with --set data.train=PATH)");
  }
  if (recipe.data.val.empty()) {
    throw ConfigError(prefix +
                      "data.val is required (the validation set's .beton path; "
                      "set it in [data] or with --set data.val=PATH)");
  }
  const ResolutionConfig& res = recipe.resolution;
  if (res.min_res > res.max_res) {
    throw ConfigError(prefix + "resolution.min_res (" + std::to_string(res.min_res) +
                      ") must be <= resolution.max_res (" + std::to_string(res.max_res) + ")");
  }
  if (res.end_ramp < res.start_ramp) {
    throw ConfigError(prefix + "resolution.end_ramp (" + std::to_string(res.end_ramp) +
                      ") must be >= resolution.start_ramp (" + std::to_string(res.start_ramp) +
                      ")");
  }
  // The triangle's knots [0, peak, epochs] must rise, or the schedule has no meaning (numpy's
  // interp would return garbage; a short run would train at a learning rate near 0). The advice
  // is a whole epoch before the last: FFCV's rule takes the rate at whole epochs and interpolates
  // within each (schedules.hpp), so in a run of E epochs only the rates at epochs 0..E-1 are
  // used, and a fractional peak of a 1-epoch run (0.5) would leave it at start_factor * lr.
  if (recipe.lr.schedule == "triangular" && recipe.lr.peak_epoch > recipe.training.epochs) {
    const int epochs = recipe.training.epochs;
    const int peak = epochs / 2;
    const std::string how = peak == 0
                                ? "the rate then starts at lr.lr and falls to 0 over the epoch"
                                : "the rate then rises to lr.lr by epoch " + std::to_string(peak) +
                                      " and falls to 0 by epoch " + std::to_string(epochs);
    throw ConfigError(prefix + "lr.peak_epoch (" + format_number(recipe.lr.peak_epoch) +
                      ") must be <= training.epochs (" + std::to_string(epochs) +
                      "); for a short run lower it too, to a whole epoch before the last: --set "
                      "lr.peak_epoch=" +
                      std::to_string(peak) + " (" + how +
                      "; the rate is taken at whole epochs, so a fractional peak in the last "
                      "epoch is never reached)");
  }
}

}  // namespace

Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_recipe_text(path);
  Recipe recipe;
  recipe.name = recipe_file_stem(path);
  recipe.source = path;
  const RecipeSchema schema = recipe_schema(recipe);
  const std::string_view grid[] = {"grid"};  // the grid of runs over this recipe: grid.hpp
  apply_recipe_text(text, path, schema, grid);
  for (const std::string& override_text : overrides) apply_recipe_override(override_text, schema);
  check_consistency(recipe, path);
  return recipe;
}

std::string recipe_to_toml(const Recipe& recipe) {
  Recipe copy = recipe;
  // A password in a data URL is not written (it comes from netrc or the environment instead).
  copy.data.train = url_without_password(copy.data.train);
  copy.data.val = url_without_password(copy.data.val);
  return resolved_recipe_toml(recipe_schema(copy), "recipe", recipe.name, recipe.source);
}

std::vector<std::string> recipe_keys() {
  Recipe defaults;
  return schema_keys(recipe_schema(defaults));
}

}  // namespace ffcv::train
