#include "ffcv/saga/saga_recipe.hpp"

#include <toml++/toml.h>

#include "ffcv/train/recipe_schema.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::saga {
namespace {

using train::add_loader_settings;
using train::RecipeSchema;

// Every key of every section, in documentation order, with its rule.
RecipeSchema saga_schema(SagaRecipe& r) {
  RecipeSchema schema;
  const auto visit = [&](std::string_view section, std::string_view key, auto& member, Rule rule) {
    schema.push_back({section, key, &member, std::move(rule)});
  };
  visit("data", "train", r.data.train, any());
  visit("data", "features", r.data.features, non_empty());
  visit("data", "targets", r.data.targets, non_empty());
  visit("data", "num_train", r.data.num_train, any());
  visit("data", "num_val", r.data.num_val, any());
  visit("data", "mask_bits", r.data.mask_bits, any());
  visit("data", "features_packed", r.data.features_packed, one_of({"auto", "no"}));
  visit("data", "loader", r.data.loader, one_of({"ffcv", "mmap"}));
  visit("data", "features_npy", r.data.features_npy, any());
  visit("data", "targets_npy", r.data.targets_npy, any());
  visit("data", "batch_size", r.data.batch_size, between(1, 1 << 24));
  add_loader_settings(schema, "data", r.data);

  visit("saga", "objective", r.saga.objective, one_of({"elastic_net", "lasso_path"}));
  visit("saga", "family", r.saga.family, one_of({"gaussian", "multinomial"}));
  visit("saga", "alpha", r.saga.alpha, between(0, 1));
  visit("saga", "lr", r.saga.lr, above(0));
  visit("saga", "lr_decay_factor", r.saga.lr_decay_factor, at_least(1));
  visit("saga", "num_lambdas", r.saga.num_lambdas, between(1, 100000));
  visit("saga", "epsilon", r.saga.epsilon, between(0, 1, true, true));
  visit("saga", "lambdas", r.saga.lambdas, at_least(0));
  visit("saga", "do_zero", r.saga.do_zero, any());
  visit("saga", "max_epochs", r.saga.max_epochs, between(1, 1e9));
  visit("saga", "tol", r.saga.tol, at_least(0));
  visit("saga", "lookbehind", r.saga.lookbehind, between(0, 1e6));
  visit("saga", "early_stop_freq", r.saga.early_stop_freq, between(1, 1e6));
  visit("saga", "early_stop_eps", r.saga.early_stop_eps, at_least(0));
  visit("saga", "min_lambdas", r.saga.min_lambdas, any());
  visit("saga", "refit", r.saga.refit, any());
  visit("saga", "selection", r.saga.selection,
        one_of({"val_loss", "one_se", "penalized_val_loss"}));
  visit("saga", "path_weights", r.saga.path_weights, any());
  visit("saga", "memory_limit_gib", r.saga.memory_limit_gib, at_least(0));
  visit("saga", "device", r.saga.device, one_of({"cpu", "cuda"}));
  visit("saga", "table", r.saga.table, one_of({"device", "host"}));
  visit("saga", "threads", r.saga.threads, between(0, 4096));

  visit("logging", "folder", r.logging.folder, non_empty());
  visit("logging", "progress", r.logging.progress, one_of({"auto", "always", "never"}));
  return schema;
}

// Rules that involve more than one key.
void check_consistency(const SagaRecipe& recipe, const std::string& path) {
  const std::string prefix = path + ": ";
  const SagaData& data = recipe.data;
  const SagaSolver& saga = recipe.saga;
  if (data.train.empty()) {
    throw ConfigError(prefix +
                      "data.train is required (the .beton with the features and targets; set "
                      "it in [data] or with --set data.train=PATH)");
  }
  if (data.loader == "mmap") {
    if (data.features_npy.empty() || data.targets_npy.empty()) {
      throw ConfigError(prefix +
                        "data.loader = \"mmap\" reads data.features_npy and data.targets_npy "
                        "(the .npy arrays the .beton was written from); set both");
    }
    if (data.order == "quasi_random") {
      throw ConfigError(prefix +
                        "data.loader = \"mmap\" has no pages to visit quasi-randomly: use "
                        "data.order = \"random\" or \"sequential\"");
    }
  }
  if (data.features_packed == "no" && data.mask_bits > 0) {
    throw ConfigError(prefix +
                      "data.features_packed = \"no\" says the features are not packed, "
                      "but data.mask_bits = " +
                      std::to_string(data.mask_bits) + " unpacks them: leave one of the two out");
  }
  if (saga.objective == "lasso_path" && saga.family != "gaussian") {
    throw ConfigError(prefix +
                      "saga.objective = \"lasso_path\" is a squared loss: saga.family "
                      "must be \"gaussian\"");
  }
  if (saga.objective == "lasso_path" && !saga.lambdas.empty()) {
    throw ConfigError(prefix +
                      "saga.lambdas belongs to saga.objective = \"elastic_net\"; a "
                      "lasso path finds each target's λ_max itself");
  }
  if (saga.objective == "elastic_net" && saga.lambdas.empty() && saga.alpha == 0) {
    throw ConfigError(prefix +
                      "saga.alpha = 0 (pure ridge) has no λ that zeroes every weight: "
                      "give the path as saga.lambdas = [...]");
  }
}

}  // namespace

bool is_saga_recipe(const std::string& path) {
  const std::string text = train::read_recipe_text(path);
  try {
    const toml::table root = toml::parse(std::string_view(text), std::string_view(path));
    return root.contains("saga") && root.get("saga")->is_table();
  } catch (const toml::parse_error& error) {
    const toml::source_position& at = error.source().begin;
    throw ConfigError(path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                      ": TOML syntax error: " + std::string(error.description()));
  }
}

SagaRecipe load_saga_recipe(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = train::read_recipe_text(path);
  SagaRecipe recipe;
  recipe.name = train::recipe_file_stem(path);
  recipe.source = path;
  const RecipeSchema schema = saga_schema(recipe);
  train::apply_recipe_text(text, path, schema);
  for (const std::string& override_text : overrides) {
    train::apply_recipe_override(override_text, schema);
  }
  check_consistency(recipe, path);
  return recipe;
}

std::string saga_recipe_to_toml(const SagaRecipe& recipe) {
  SagaRecipe copy = recipe;
  return train::resolved_recipe_toml(saga_schema(copy), "SAGA recipe", recipe.name, recipe.source);
}

std::vector<std::string> saga_recipe_keys() {
  SagaRecipe defaults;
  return train::schema_keys(saga_schema(defaults));
}

}  // namespace ffcv::saga
