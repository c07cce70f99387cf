#include "ablate/ablation_spec.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/loader_arguments.hpp"
#include "common/arguments.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {

// The `ffcv write` options a sweep may set (those that change the .beton, not how it is made).
const std::vector<std::string> kWriterKeys = {"write_mode",      "max_resolution",
                                              "jpeg_quality",    "compress_probability",
                                              "smart_threshold", "page_size"};

// The `ffcv bench` options a sweep may set: the loader's settings (their table,
// ffcv/settings/loader_settings.hpp), bench's own options, and `cold`.
const std::vector<std::string> kBenchKeys = [] {
  std::vector<std::string> keys = {"batch_size"};
  for (const std::string& name : loader_setting_names()) keys.push_back(name);
  for (const char* key : {"fields", "image_decoder", "image_size", "no_dct_scaling", "flip",
                          "epochs", "max_batches", "cold"}) {
    keys.push_back(key);
  }
  return keys;
}();

namespace {

const std::vector<std::string> kSources = {"imagenet-like", "folder", "fashion-mnist", "beton"};

// Settings that are flags (true: given), and those whose value is a number (never a string).
const std::vector<std::string> kFlagKeys = {"no_dct_scaling", "flip", "cold"};
// The names of the loader settings whose value `keep` accepts.
template <typename Keep>
std::vector<std::string> setting_names_where(Keep keep) {
  std::vector<std::string> names;
  LoaderSettings defaults;
  for (const SettingRow& row : loader_setting_rows(defaults)) {
    if (keep(row.slot)) names.emplace_back(row.name);
  }
  return names;
}

// Loader settings that take true or false (drop_last, os_cache).
const std::vector<std::string> kBoolKeys = setting_names_where(
    [](const SettingSlot& slot) { return std::holds_alternative<bool*>(slot); });
const std::vector<std::string> kNumberKeys = [] {
  std::vector<std::string> keys = {"max_resolution", "jpeg_quality", "compress_probability",
                                   "batch_size",     "image_size",   "epochs",
                                   "max_batches"};
  for (const std::string& name : setting_names_where([](const SettingSlot& slot) {
         return !std::holds_alternative<std::string*>(slot) && !std::holds_alternative<bool*>(slot);
       })) {
    keys.push_back(name);
  }
  return keys;
}();

std::string read_text(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    const bool output = std::filesystem::exists(std::filesystem::path(path) / "cells.tsv", error);
    throw ConfigError(path +
                      " is a folder, not an ablation spec (a TOML file with a [sweep] "
                      "section)" +
                      (output ? "; it holds a sweep's results: give it as --output DIR, after "
                                "the spec"
                              : ""));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "read the ablation spec", errno);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

[[noreturn]] void fail(const std::string& path, const std::string& where, const std::string& what) {
  throw ConfigError(path + ": " + where + ": " + what);
}

// A scalar TOML value as the command line spells it.
SettingValue setting_value(const toml::node& node, const std::string& path,
                           const std::string& where) {
  if (const auto* b = node.as_boolean()) return {b->get() ? "true" : "false", true};
  if (const auto* i = node.as_integer()) return {std::to_string(i->get()), false};
  if (const auto* f = node.as_floating_point()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.10g", f->get());
    return {text, false};
  }
  if (const auto* s = node.as_string()) {
    if (s->get().empty()) fail(path, where, "an empty string is not a value");
    return {s->get(), false};
  }
  fail(path, where, "must be a number, a string or a boolean");
}

// "unknown key 'wokers' (did you mean 'workers'?); known: ..."
[[noreturn]] void unknown_key(const std::string& path, const std::string& section,
                              const std::string& key, const std::vector<std::string>& known) {
  std::string message = "unknown key '" + key + "'";
  if (const std::string near = closest_name(key, known); !near.empty()) {
    message += " (did you mean '" + near + "'?)";
  }
  message += "; known keys:";
  for (const std::string& name : known) message += " " + name;
  fail(path, "[" + section + "]", message);
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// An old spelling of a loader setting (workers, keep_last, process_cache, cache_budget, ...): the
// setting's name, with a note naming it once; other keys as they are.
std::string current_key(const std::string& key) {
  const SettingAlias* alias = find_setting_alias(key);
  if (alias == nullptr) return key;
  note_renamed_once(key, std::string(alias->name));
  return std::string(alias->name);
}

// Whether `given`'s values are checked as `key`'s: its own, or an old spelling of the same value
// (workers); flags (keep_last) and sizes (cache_budget) are checked by alias_value instead.
bool checks_kind(const std::string& key, const std::string& given) {
  const SettingAlias* alias = find_setting_alias(given);
  return key == given || (alias != nullptr && alias->value == SettingAlias::Value::kSame);
}

// The value an old spelling's value stands for (keep_last = true is drop_last = false).
SettingValue current_value(const std::string& key, const SettingValue& value,
                           const std::string& path, const std::string& where) {
  const SettingAlias* alias = find_setting_alias(key);
  if (alias == nullptr) return value;
  try {
    return {alias_value(*alias, value.text), value.is_bool};
  } catch (const ConfigError& error) {
    fail(path, where, error.what());
  }
}

// A flag or a true/false setting takes a boolean; a number is a TOML number, not a string that
// looks like one.
void check_kind(const std::string& key, const toml::node& node, const std::string& path,
                const std::string& where) {
  const bool takes_bool = contains(kFlagKeys, key) || contains(kBoolKeys, key);
  if (contains(kFlagKeys, key) && !node.is_boolean()) {
    fail(path, where, "is a flag: true or false");
  }
  if (contains(kBoolKeys, key) && !node.is_boolean()) fail(path, where, "takes true or false");
  if (!takes_bool && node.is_boolean() &&
      (contains(kWriterKeys, key) || contains(kBenchKeys, key))) {
    fail(path, where, "takes a value, not true or false");
  }
  if (contains(kNumberKeys, key) && node.is_string()) {
    fail(path, where, "must be a number, not the string \"" + node.as_string()->get() + "\"");
  }
}

// Hands one setting to the option parser of `ffcv write` or `ffcv bench` (and the checks those
// commands make next), raising its complaint as a ConfigError at `where`.
void check_value(const std::string& key, const SettingValue& value, const std::string& path,
                 const std::string& where) {
  const bool writer = contains(kWriterKeys, key);
  std::vector<std::string> argv =
      writer ? std::vector<std::string>{"folder", "DIR"} : std::vector<std::string>{"FILE.beton"};
  for (const std::string& argument : setting_arguments({{key, value}})) argv.push_back(argument);
  try {
    Arguments args = writer ? write_command_arguments() : bench_arguments();
    args.parse(argv);
    if (writer) {
      check_write_command_options(args);
    } else {
      loader_options(args);
      field_pipelines(args);
    }
  } catch (const UsageError& error) {
    fail(path, where, error.what());
  } catch (const ConfigError& error) {
    fail(path, where, error.what());
  }
}

const toml::table* section(const toml::table& root, const std::string& path, const char* name) {
  const toml::node* node = root.get(name);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) fail(path, std::string("[") + name + "]", "must be a table");
  return node->as_table();
}

void read_train(const toml::table* table, const std::string& path, AblationSpec& spec) {
  if (table == nullptr) return;
  for (const auto& [key_view, node] : *table) {
    const std::string key(key_view.str());
    const std::string where = "[train] " + key;
    if (key == "recipe") {
      const auto* text = node.as_string();
      if (text == nullptr || text->get().empty()) fail(path, where, "must be a non-empty string");
      spec.recipe = text->get();
    } else if (key == "set") {
      const toml::array* values = node.as_array();
      if (values == nullptr) fail(path, where, "must be a list of \"section.key=value\" strings");
      for (const toml::node& value : *values) {
        const auto* text = value.as_string();
        if (text == nullptr || text->get().find('=') == std::string::npos) {
          fail(path, where, "must be a list of \"section.key=value\" strings");
        }
        spec.recipe_set.push_back(text->get());
      }
    } else {
      unknown_key(path, "train", key, {"recipe", "set"});
    }
  }
  if (spec.recipe.empty()) fail(path, "[train] recipe", "is required in a [train] section");
}

bool is_recipe_key(const std::string& key) { return key.find('.') != std::string::npos; }

void read_settings(const toml::table* table, const std::string& path, const char* name,
                   const std::vector<std::string>& known, Settings& settings) {
  if (table == nullptr) return;
  for (const auto& [key_view, node] : *table) {
    const std::string given(key_view.str());
    const std::string where = std::string("[") + name + "] " + given;
    const std::string key = contains(known, given) ? given : current_key(given);
    if (!contains(known, key)) unknown_key(path, name, given, known);
    if (checks_kind(key, given)) check_kind(key, node, path, where);
    settings[key] = current_value(given, setting_value(node, path, where), path, where);
    check_value(key, settings[key], path, where);
  }
}

DatasetSpec read_dataset(const toml::table* table, const std::string& path, bool training) {
  DatasetSpec dataset;
  if (table == nullptr && training) return dataset;  // the recipe's own data
  if (table == nullptr) fail(path, "[dataset]", "the section is required (source = ...)");
  for (const auto& [key_view, node] : *table) {
    const std::string key(key_view.str());
    const std::string where = "[dataset] " + key;
    if (key == "source" || key == "path") {
      const auto* text = node.as_string();
      if (text == nullptr || text->get().empty()) fail(path, where, "must be a non-empty string");
      (key == "source" ? dataset.source : dataset.path) = text->get();
    } else if (key == "count" || key == "classes" || key == "seed") {
      const auto* number = node.as_integer();
      const std::int64_t min = key == "seed" ? 0 : 1;
      if (number == nullptr || number->get() < min) {
        fail(path, where, "must be an integer of at least " + std::to_string(min));
      }
      if (key == "count") dataset.count = static_cast<std::uint64_t>(number->get());
      if (key == "classes")
        dataset.classes = static_cast<int>(std::min<std::int64_t>(number->get(), 1000));
      if (key == "seed") dataset.seed = static_cast<std::uint64_t>(number->get());
    } else {
      unknown_key(path, "dataset", key, {"source", "count", "classes", "seed", "path"});
    }
  }
  if (!contains(kSources, dataset.source)) {
    fail(path, "[dataset] source",
         "'" + dataset.source + "' is not one of imagenet-like, folder, fashion-mnist, beton");
  }
  if ((dataset.source == "folder" || dataset.source == "beton") && dataset.path.empty()) {
    fail(path, "[dataset] path", "is required for source = \"" + dataset.source + "\"");
  }
  return dataset;
}

std::string settings_text(const Settings& settings) {
  std::string text;
  for (const auto& [key, value] : settings) text += key + "=" + value.text + ";";
  return text;
}

// The spec file at `path`, parsed, its top-level keys checked.
toml::table parse_spec_file(const std::string& path) {
  const std::string text = read_text(path);
  toml::table root;
  try {
    root = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& error) {
    throw ConfigError(path + ":" + std::to_string(error.source().begin.line) +
                      ": TOML syntax error: " + std::string(error.description()));
  }
  for (const auto& [key_view, node] : root) {
    const std::string key(key_view.str());
    if (!contains({"dataset", "write", "bench", "sweep", "train"}, key)) {
      unknown_key(path, "top level", key, {"dataset", "write", "bench", "sweep", "train"});
    }
  }
  return root;
}

// The keys a sweep of `spec` may have: writer settings, and the recipe's keys (a training
// sweep) or bench's.
std::vector<std::string> sweep_keys(const AblationSpec& spec) {
  std::vector<std::string> known = kWriterKeys;
  if (spec.training()) {
    const std::vector<std::string> keys = train::recipe_keys();
    known.insert(known.end(), keys.begin(), keys.end());
  } else {
    known.insert(known.end(), kBenchKeys.begin(), kBenchKeys.end());
  }
  return known;
}

// The axis `given` = `node` of [sweep], checked against the `known` keys and the fixed settings
// of `spec`.
SweepAxis read_axis(const std::string& given, const toml::node& node, const AblationSpec& spec,
                    const std::vector<std::string>& known, const std::string& path) {
  const std::string where = "[sweep] " + given;
  const std::string key = spec.training() || contains(known, given) ? given : current_key(given);
  if (!contains(known, key) && !spec.training() && is_recipe_key(key)) {
    fail(path, where, "is a recipe key: sweeping the recipe needs a [train] section");
  }
  if (!contains(known, key) && spec.training() &&
      (contains(kBenchKeys, key) || find_setting_alias(key) != nullptr)) {
    fail(path, where,
         "is a bench setting: a training sweep sets the loader through recipe keys such as "
         "data.num_workers");
  }
  if (!contains(known, key)) unknown_key(path, "sweep", key, known);
  if (spec.training() && spec.dataset.source.empty() && contains(kWriterKeys, key)) {
    fail(path, where, "is a writer setting: it needs a [dataset] to write");
  }
  const toml::array* values = node.as_array();
  if (values == nullptr || values->empty()) fail(path, where, "must be a non-empty list of values");
  SweepAxis axis{key, {}};
  for (const toml::node& value : *values) {
    if (!is_recipe_key(key) && checks_kind(key, given)) check_kind(key, value, path, where);
    SettingValue setting = current_value(given, setting_value(value, path, where), path, where);
    if (!is_recipe_key(key)) check_value(key, setting, path, where);
    if (std::find(axis.values.begin(), axis.values.end(), setting) != axis.values.end()) {
      fail(path, where, "lists " + setting.text + " twice");
    }
    axis.values.push_back(std::move(setting));
  }
  bool fixed_in_recipe = false;
  for (const std::string& text : spec.recipe_set) {
    fixed_in_recipe = fixed_in_recipe || text.substr(0, text.find('=')) == key;
  }
  if (spec.write.count(key) || spec.bench.count(key) || fixed_in_recipe) {
    fail(path, where, "is also a fixed setting; give it in one place");
  }
  return axis;
}

// The axes of [sweep] in the order the spec lists them (a TOML table's keys come sorted).
std::vector<SweepAxis> read_sweep(const toml::table& sweep, const AblationSpec& spec,
                                  const std::string& path) {
  const std::vector<std::string> known = sweep_keys(spec);
  std::vector<SweepAxis> axes;
  std::vector<std::uint32_t> axis_lines;
  for (const auto& [key_view, node] : sweep) {
    axes.push_back(read_axis(std::string(key_view.str()), node, spec, known, path));
    axis_lines.push_back(node.source().begin.line);
  }
  std::vector<std::size_t> order(axes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return axis_lines[a] < axis_lines[b]; });
  std::vector<SweepAxis> sorted;
  for (const std::size_t i : order) sorted.push_back(std::move(axes[i]));
  return sorted;
}

// Writer settings, fixed or swept, need a dataset to write, and cannot apply to a .beton read as
// it is.
void check_writes(const AblationSpec& spec, const std::string& path) {
  if (spec.training() && spec.dataset.source.empty() && !spec.write.empty()) {
    fail(path, "[write]", "writer settings need a [dataset] to write");
  }
  if (spec.dataset.source == "beton") {
    bool writes = !spec.write.empty();
    for (const SweepAxis& axis : spec.axes) writes = writes || contains(kWriterKeys, axis.key);
    if (writes) {
      fail(path, "[write]",
           "source = \"beton\" reads an existing file: writer settings cannot apply to it");
    }
  }
}

}  // namespace

std::string AblationCell::dataset_key() const { return settings_text(write); }

std::string AblationCell::key() const {
  std::string text = "write:" + settings_text(write) + "|bench:" + settings_text(bench);
  if (!recipe_path.empty()) text += "|recipe:" + recipe_path + ":" + settings_text(recipe);
  return text;
}

AblationSpec load_ablation_spec(const std::string& path) {
  const toml::table root = parse_spec_file(path);
  AblationSpec spec;
  spec.path = path;
  spec.name = std::filesystem::path(path).stem().string();
  read_train(section(root, path, "train"), path, spec);
  spec.dataset = read_dataset(section(root, path, "dataset"), path, spec.training());
  read_settings(section(root, path, "write"), path, "write", kWriterKeys, spec.write);
  read_settings(section(root, path, "bench"), path, "bench", kBenchKeys, spec.bench);

  const toml::table* sweep = section(root, path, "sweep");
  if (sweep == nullptr || sweep->empty()) {
    fail(path, "[sweep]", "the section is required, with at least one axis (key = [values])");
  }
  if (spec.training() && !spec.bench.empty()) {
    fail(path, "[bench]",
         "a training sweep ([train]) has no bench settings: set the loader through recipe keys "
         "such as data.num_workers or data.os_cache in [train] set or [sweep]");
  }
  spec.axes = read_sweep(*sweep, spec, path);
  check_writes(spec, path);
  return spec;
}

std::vector<std::string> setting_arguments(const Settings& settings) {
  std::vector<std::string> arguments;
  for (const auto& [key, value] : settings) {
    if (key == "cold") {
      if (value.text == "true") arguments.push_back("--cold");
      continue;
    }
    const std::string flag = "--" + setting_flag(key);
    if (contains(kFlagKeys, key)) {
      if (value.text == "true") arguments.push_back(flag);
    } else {
      arguments.push_back(flag);
      arguments.push_back(value.text);
    }
  }
  return arguments;
}

train::Provenance ablation_provenance(const AblationSpec& spec) {
  train::Provenance record;
  const DatasetSpec& data = spec.dataset;
  if (!data.source.empty()) {
    record.add("dataset source", data.source);
    if (data.source == "imagenet-like") {
      record.add("dataset count", std::to_string(data.count));
      record.add("dataset classes", std::to_string(data.classes));
    }
    record.add("dataset seed", std::to_string(data.seed));
    if (!data.path.empty()) record.add("dataset path", url_without_password(data.path));
    if (data.source == "beton") record.add_dataset(data.path);
    if (data.source == "folder" || (data.source == "fashion-mnist" && !data.path.empty())) {
      try {
        record.add("data " + data.path, train::folder_identity(data.path));
      } catch (const Error&) {
        // Unreadable: writing its dataset fails and says why.
      }
    }
  }
  if (!spec.training()) return record;
  std::vector<std::string> swept;
  for (const SweepAxis& axis : spec.axes) {
    if (!is_recipe_key(axis.key)) continue;
    swept.push_back(axis.key);
    if (axis.key == "data.train" || axis.key == "data.val") {
      for (const SettingValue& value : axis.values) record.add_dataset(value.text);
    }
  }
  // With a [dataset], each cell trains on the file written for it.
  if (!data.source.empty()) swept.push_back("data.train");
  const train::Recipe recipe = train::load_recipe(spec.recipe, spec.recipe_set);
  record.add_recipe(recipe, swept);
  if (!contains(swept, "data.train")) record.add_dataset(recipe.data.train);
  if (!contains(swept, "data.val")) record.add_dataset(recipe.data.val);
  return record;
}

std::vector<AblationCell> expand_cells(const AblationSpec& spec) {
  std::vector<AblationCell> cells(1);
  cells[0].write = spec.write;
  cells[0].bench = spec.bench;
  cells[0].recipe_path = spec.recipe;
  for (const std::string& text : spec.recipe_set) {
    const std::size_t equals = text.find('=');
    cells[0].recipe[text.substr(0, equals)] = {text.substr(equals + 1), false};
  }
  for (const SweepAxis& axis : spec.axes) {
    Settings AblationCell::*target = &AblationCell::bench;
    if (contains(kWriterKeys, axis.key)) target = &AblationCell::write;
    if (is_recipe_key(axis.key)) target = &AblationCell::recipe;
    std::vector<AblationCell> next;
    for (const AblationCell& cell : cells) {
      for (const SettingValue& value : axis.values) {
        AblationCell extended = cell;
        extended.axis_values.push_back(value);
        (extended.*target)[axis.key] = value;
        next.push_back(std::move(extended));
      }
    }
    cells = std::move(next);
  }
  return cells;
}

std::vector<std::string> recipe_overrides(const AblationCell& cell) {
  std::vector<std::string> overrides;
  for (const auto& [key, value] : cell.recipe) overrides.push_back(key + "=" + value.text);
  return overrides;
}

void check_training_cells(const AblationSpec& spec, const std::vector<AblationCell>& cells) {
  if (!spec.training()) return;
  for (const AblationCell& cell : cells) {
    try {
      train::load_recipe(spec.recipe, recipe_overrides(cell));
    } catch (const ConfigError& error) {
      throw ConfigError(spec.path + ": cell " + cell_label(spec, cell) + ": " + error.what());
    }
  }
}

std::string cell_label(const AblationSpec& spec, const AblationCell& cell) {
  std::string label;
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    label += (i ? " " : "") + spec.axes[i].key + "=" + cell.axis_values[i].text;
  }
  return label;
}

}  // namespace ffcv::tools
