#include "ffcv/train/recipe.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "ffcv/closest_name.hpp"
#include "ffcv/errors.hpp"
#include "ffcv/json_text.hpp"

namespace ffcv::train {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What a value must satisfy beyond its type: numeric bounds (for lists, of every element), a
// set of choices (strings), non-emptiness (strings), lo <= hi (pairs).
struct Rule {
  double min = -kInf;
  bool min_open = false;
  double max = kInf;
  bool max_open = false;
  std::vector<std::string_view> choices;
  bool non_empty = false;
  bool ordered = false;
};

Rule any() { return {}; }
Rule at_least(double min) {
  Rule rule;
  rule.min = min;
  return rule;
}
Rule above(double min) {
  Rule rule = at_least(min);
  rule.min_open = true;
  return rule;
}
Rule between(double min, double max, bool min_open = false, bool max_open = false) {
  Rule rule;
  rule.min = min;
  rule.min_open = min_open;
  rule.max = max;
  rule.max_open = max_open;
  return rule;
}
Rule one_of(std::vector<std::string_view> choices) {
  Rule rule;
  rule.choices = std::move(choices);
  return rule;
}
Rule non_empty() {
  Rule rule;
  rule.non_empty = true;
  return rule;
}
Rule ordered(Rule rule) {
  rule.ordered = true;
  return rule;
}

// Every key of every section, in documentation order, with its rule. `visit` is called as
// visit(section, key, member, rule); R is Recipe or const Recipe, so one list serves reading,
// writing and listing.
template <class R, class Visit>
void for_each_field(R& r, Visit&& visit) {
  visit("data", "train", r.data.train, any());
  visit("data", "val", r.data.val, any());
  visit("data", "image_field", r.data.image_field, non_empty());
  visit("data", "label_field", r.data.label_field, non_empty());
  visit("data", "num_workers", r.data.num_workers, at_least(0));
  visit("data", "os_cache", r.data.os_cache, any());
  visit("data", "cache_budget_mib", r.data.cache_budget_mib, at_least(1));
  visit("data", "cache_readers", r.data.cache_readers, between(1, 256));
  visit("data", "storage_latency_ms", r.data.storage_latency_ms, between(0, 60000));
  visit("data", "storage_bandwidth_mbs", r.data.storage_bandwidth_mbs, between(0, 1000000));
  visit("data", "order", r.data.order, one_of({"sequential", "random", "quasi_random"}));
  visit("data", "window_pages", r.data.window_pages, between(0, 1048576));
  visit("data", "seed", r.data.seed, any());
  visit("data", "batches_ahead", r.data.batches_ahead, at_least(1));
  visit("data", "mean", r.data.mean, between(0, 255));
  visit("data", "std", r.data.std, above(0));
  visit("data", "interpolation", r.data.interpolation, one_of({"area", "linear"}));
  visit("data", "fast_dct", r.data.fast_dct, any());
  visit("data", "op_libraries", r.data.op_libraries, non_empty());
  visit("data", "on_error", r.data.on_error, one_of({"fail", "skip"}));
  visit("data", "max_skipped_fraction", r.data.max_skipped_fraction, between(0, 1));

  visit("augment", "scale", r.augment.scale, ordered(between(0, 1, true)));
  visit("augment", "ratio", r.augment.ratio, ordered(above(0)));
  visit("augment", "flip", r.augment.flip, any());
  visit("augment", "operations", r.augment.operations, non_empty());
  visit("augment", "mixup_alpha", r.augment.mixup_alpha, at_least(0));
  visit("augment", "mixup_same_lambda", r.augment.mixup_same_lambda, any());

  visit("model", "arch", r.model.arch, one_of({"resnet18", "resnet50"}));
  visit("model", "width", r.model.width, above(0));
  visit("model", "stem", r.model.stem, one_of({"imagenet", "small"}));
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
}

struct KeyName {
  std::string section, key;
};

std::vector<KeyName> all_keys() {
  std::vector<KeyName> keys;
  const Recipe defaults;
  for_each_field(defaults,
                 [&](std::string_view section, std::string_view key, const auto&, const Rule&) {
                   keys.push_back({std::string(section), std::string(key)});
                 });
  return keys;
}

std::vector<std::string> all_sections() {
  std::vector<std::string> sections;
  for (const KeyName& name : all_keys()) {
    if (sections.empty() || sections.back() != name.section) sections.push_back(name.section);
  }
  return sections;
}

bool is_section(std::string_view section) {
  for (const std::string& known : all_sections()) {
    if (known == section) return true;
  }
  return false;
}

// Short typos are common and short names are close to everything: allow about one edit per two
// characters, at most three.
std::size_t suggestion_distance(std::string_view name) {
  return std::min<std::size_t>(3, std::max<std::size_t>(1, (name.size() + 1) / 2));
}

// The valid "section.key" nearest to a mistyped one: a key of the same section first, then a key
// of another section ("[training] lr" -> "lr.lr"), then the nearest full name ("trainig.epochs"
// -> "training.epochs").
std::string suggest_key(std::string_view section, std::string_view key) {
  std::vector<std::string> same_section, key_names, full_names;
  for (const KeyName& name : all_keys()) {
    if (name.section == section) same_section.push_back(name.key);
    key_names.push_back(name.key);
    full_names.push_back(name.section + "." + name.key);
  }
  if (std::string best = closest_name(key, same_section, suggestion_distance(key)); !best.empty()) {
    return std::string(section) + "." + best;
  }
  const std::string best = closest_name(key, key_names, suggestion_distance(key));
  for (std::size_t i = 0; i < key_names.size(); ++i) {
    if (!best.empty() && key_names[i] == best) return full_names[i];
  }
  const std::string full = std::string(section) + "." + std::string(key);
  return closest_name(full, full_names, suggestion_distance(full));
}

std::string did_you_mean(const std::string& suggestion) {
  return suggestion.empty() ? "" : " (did you mean '" + suggestion + "'?)";
}

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// A TOML float literal that reads back as exactly `value` (shortest round-trip digits).
std::string toml_float(double value) {
  std::string text = format_number(value);
  if (text.find_first_of(".eEni") == std::string::npos) text += ".0";
  return text;
}

// JSON's string escapes are TOML basic-string escapes too.
std::string toml_string(std::string_view text) { return json_quote(text); }

std::string toml_text(const std::string& value) { return toml_string(value); }
std::string toml_text(int value) { return std::to_string(value); }
std::string toml_text(std::uint64_t value) { return std::to_string(value); }
std::string toml_text(double value) { return toml_float(value); }
std::string toml_text(bool value) { return value ? "true" : "false"; }
std::string toml_text(const std::vector<std::string>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + toml_string(values[i]);
  return text + "]";
}
template <std::size_t N>
std::string toml_text(const std::array<double, N>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < N; ++i) text += (i ? ", " : "") + toml_float(values[i]);
  return text + "]";
}

// Where a value came from, for the prefix of error messages.
struct Site {
  const std::string* path = nullptr;  // the recipe file, for values read from it
  std::string override_text;          // the "--set" argument, for values given there
  std::optional<std::string> raw;     // an override's value text, taken as is by string keys

  std::string at(const toml::node& node) const {
    if (!override_text.empty()) return "--set " + override_text;
    const toml::source_position& begin = node.source().begin;
    return *path + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column);
  }
};

std::string describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "the string " + toml_string(node.as_string()->get());
    case toml::node_type::integer:
      return "the integer " + std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point:
      return "the float " + toml_float(node.as_floating_point()->get());
    case toml::node_type::boolean:
      return node.as_boolean()->get() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

[[noreturn]] void fail(const Site& site, const toml::node& node, const std::string& message) {
  throw ConfigError(site.at(node) + ": " + message);
}

[[noreturn]] void wrong_type(const Site& site, const toml::node& node, const std::string& name,
                             const std::string& expected) {
  fail(site, node, name + " must be " + expected + ", got " + describe(node));
}

std::string range_text(const Rule& rule) {
  const std::string lo = format_number(rule.min), hi = format_number(rule.max);
  if (rule.max == kInf) return (rule.min_open ? "> " : ">= ") + lo;
  if (rule.min == -kInf) return (rule.max_open ? "< " : "<= ") + hi;
  return std::string("in ") + (rule.min_open ? "(" : "[") + lo + ", " + hi +
         (rule.max_open ? ")" : "]");
}

bool in_range(double value, const Rule& rule) {
  const bool low_ok = rule.min_open ? value > rule.min : value >= rule.min;
  const bool high_ok = rule.max_open ? value < rule.max : value <= rule.max;
  return low_ok && high_ok;
}

void check_range(double value, const Rule& rule, const Site& site, const toml::node& node,
                 const std::string& name) {
  if (!in_range(value, rule)) {
    fail(site, node, name + " must be " + range_text(rule) + ", got " + format_number(value));
  }
}

// Reading one value into its member: one overload per member type.

void read_value(const toml::node& node, std::string& out, const Site& site, const std::string& name,
                const Rule& rule) {
  if (const auto* text = node.as_string()) {
    out = text->get();
  } else if (site.raw) {
    out = *site.raw;
  } else {
    wrong_type(site, node, name, "a string");
  }
  if (rule.non_empty && out.empty()) fail(site, node, name + " must not be empty");
  if (rule.choices.empty()) return;
  std::string allowed;
  for (std::string_view choice : rule.choices) {
    if (choice == out) return;
    allowed += (allowed.empty() ? "" : ", ") + std::string(choice);
  }
  fail(site, node, name + " must be one of " + allowed + "; got " + toml_string(out));
}

std::int64_t read_integer(const toml::node& node, const Site& site, const std::string& name) {
  const auto* integer = node.as_integer();
  if (integer == nullptr) wrong_type(site, node, name, "an integer");
  return integer->get();
}

void read_value(const toml::node& node, int& out, const Site& site, const std::string& name,
                const Rule& rule) {
  const std::int64_t value = read_integer(node, site, name);
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    fail(site, node, name + " is out of range: " + std::to_string(value));
  }
  check_range(static_cast<double>(value), rule, site, node, name);
  out = static_cast<int>(value);
}

void read_value(const toml::node& node, std::uint64_t& out, const Site& site,
                const std::string& name, const Rule&) {
  const std::int64_t value = read_integer(node, site, name);
  if (value < 0) fail(site, node, name + " must be >= 0, got " + std::to_string(value));
  out = static_cast<std::uint64_t>(value);
}

// A list of strings; `non_empty` applies to each of them.
void read_value(const toml::node& node, std::vector<std::string>& out, const Site& site,
                const std::string& name, const Rule& rule) {
  const auto* array = node.as_array();
  if (array == nullptr) wrong_type(site, node, name, "an array of strings");
  std::vector<std::string> values;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const auto* text = element.as_string();
    if (text == nullptr)
      wrong_type(site, element, name + "[" + std::to_string(i) + "]", "a string");
    if (rule.non_empty && text->get().empty()) {
      fail(site, element, name + "[" + std::to_string(i) + "] must not be empty");
    }
    values.push_back(text->get());
  }
  out = std::move(values);
}

// Integers are accepted where floats are expected (TOML `lr = 2`), not the reverse.
double read_number(const toml::node& node, const Site& site, const std::string& name,
                   const Rule& rule) {
  double value = 0;
  if (const auto* integer = node.as_integer()) {
    value = static_cast<double>(integer->get());
  } else if (const auto* floating = node.as_floating_point()) {
    value = floating->get();
  } else {
    wrong_type(site, node, name, "a number");
  }
  if (!std::isfinite(value))
    fail(site, node, name + " must be a finite number, got " + describe(node));
  check_range(value, rule, site, node, name);
  return value;
}

void read_value(const toml::node& node, double& out, const Site& site, const std::string& name,
                const Rule& rule) {
  out = read_number(node, site, name, rule);
}

void read_value(const toml::node& node, bool& out, const Site& site, const std::string& name,
                const Rule&) {
  const auto* boolean = node.as_boolean();
  if (boolean == nullptr) wrong_type(site, node, name, "true or false");
  out = boolean->get();
}

template <std::size_t N>
void read_value(const toml::node& node, std::array<double, N>& out, const Site& site,
                const std::string& name, const Rule& rule) {
  const std::string expected = "an array of " + std::to_string(N) + " numbers";
  const auto* array = node.as_array();
  if (array == nullptr) wrong_type(site, node, name, expected);
  if (array->size() != N) {
    fail(site, node,
         name + " must be " + expected + ", got " + std::to_string(array->size()) + " values");
  }
  std::array<double, N> values{};
  for (std::size_t i = 0; i < N; ++i) {
    const toml::node& element = *array->get(i);
    if (!element.is_number()) wrong_type(site, element, name, expected);
    values[i] = read_number(element, site, name + "[" + std::to_string(i) + "]", rule);
  }
  if constexpr (N == 2) {
    if (rule.ordered && values[0] > values[1]) {
      fail(site, node, name + " must be [low, high] with low <= high, got " + toml_text(values));
    }
  }
  out = values;
}

// Stores `node` in the field section.key; false when there is no such field.
bool assign(Recipe& recipe, std::string_view section, std::string_view key, const toml::node& node,
            const Site& site) {
  bool found = false;
  for_each_field(recipe,
                 [&](std::string_view s, std::string_view k, auto& member, const Rule& rule) {
                   if (found || s != section || k != key) return;
                   found = true;
                   read_value(node, member, site, std::string(s) + "." + std::string(k), rule);
                 });
  return found;
}

std::string position(const std::string& path, const toml::source_region& region) {
  return path + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

void apply_table(const toml::table& root, const std::string& path, Recipe& recipe) {
  Site site;
  site.path = &path;
  for (const auto& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    if (section == "grid") continue;  // the grid of runs over this recipe: grid.hpp reads it
    if (!is_section(section)) {
      if (section_node.is_table()) {
        const std::string best =
            closest_name(section, all_sections(), suggestion_distance(section));
        throw ConfigError(position(path, section_key.source()) + ": unknown section [" + section +
                          "]" + (best.empty() ? "" : " (did you mean [" + best + "]?)"));
      }
      throw ConfigError(position(path, section_key.source()) + ": key '" + section +
                        "' is outside any section" + did_you_mean(suggest_key("", section)));
    }
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      throw ConfigError(position(path, section_key.source()) + ": '" + section +
                        "' must be a table ([" + section + "]), got " + describe(section_node));
    }
    for (const auto& [key, value] : *table) {
      if (!assign(recipe, section, key.str(), value, site)) {
        throw ConfigError(position(path, key.source()) + ": unknown key '" +
                          std::string(key.str()) + "' in [" + section + "]" +
                          did_you_mean(suggest_key(section, key.str())));
      }
    }
  }
}

void apply_override(const std::string& text, Recipe& recipe) {
  const std::string prefix = "--set " + text + ": ";
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos) throw ConfigError(prefix + "expected section.key=value");
  const std::string name = text.substr(0, equals);
  const std::string value = text.substr(equals + 1);
  const std::size_t dot = name.find('.');
  const std::string section = dot == std::string::npos ? "" : name.substr(0, dot);
  const std::string key = dot == std::string::npos ? name : name.substr(dot + 1);

  // The value as TOML if it is one (and nothing more), else as a plain string.
  std::optional<toml::table> parsed;
  try {
    const std::string document = "v = " + value;
    toml::table table = toml::parse(std::string_view(document), std::string_view("--set"));
    if (table.size() == 1 && table.contains("v")) parsed = std::move(table);
  } catch (const toml::parse_error&) {
  }
  toml::table fallback;
  fallback.insert("v", value);
  const toml::node& node = parsed ? *parsed->get("v") : *fallback.get("v");

  if (dot == std::string::npos && is_section(name)) {
    throw ConfigError(prefix + "'" + name + "' is a section; give one key as " + name +
                      ".KEY=VALUE");
  }
  Site site;
  site.override_text = text;
  site.raw = value;
  if (dot == std::string::npos || !assign(recipe, section, key, node, site)) {
    throw ConfigError(prefix + "unknown key '" + name + "'" +
                      did_you_mean(suggest_key(section, key)));
  }
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
  // interp would return garbage; a short run would train at a learning rate near 0).
  if (recipe.lr.schedule == "triangular" && recipe.lr.peak_epoch > recipe.training.epochs) {
    throw ConfigError(prefix + "lr.peak_epoch (" + format_number(recipe.lr.peak_epoch) +
                      ") must be <= training.epochs (" + std::to_string(recipe.training.epochs) +
                      "); for a short run lower it too, e.g. --set lr.peak_epoch=0.5");
  }
}

// "dir/rn50_16_epochs.toml" -> "rn50_16_epochs" (as std::filesystem::path::stem).
std::string file_stem(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot != 0) name.resize(dot);
  return name;
}

}  // namespace

std::string read_recipe_text(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    if (error == ENOENT) throw ConfigError("recipe not found: " + path);
    throw ConfigError("cannot read recipe " + path + ": " + std::strerror(error));
  }
  std::string text;
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) throw ConfigError("cannot read recipe " + path + ": " + std::strerror(error));
  return text;
}

Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_recipe_text(path);
  toml::table root;
  try {
    root = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& error) {
    throw ConfigError(position(path, error.source()) +
                      ": TOML syntax error: " + std::string(error.description()));
  }
  Recipe recipe;
  recipe.name = file_stem(path);
  recipe.source = path;
  apply_table(root, path, recipe);
  for (const std::string& override_text : overrides) apply_override(override_text, recipe);
  check_consistency(recipe, path);
  return recipe;
}

std::string recipe_to_toml(const Recipe& recipe) {
  std::string out = "# The resolved recipe";
  if (!recipe.name.empty()) out += " " + recipe.name;
  out += ", every key written out.\n";
  if (!recipe.source.empty()) out += "# Read from " + recipe.source + ".\n";
  std::string_view current;
  for_each_field(
      recipe, [&](std::string_view section, std::string_view key, const auto& value, const Rule&) {
        if (section != current) {
          out += "\n[" + std::string(section) + "]\n";
          current = section;
        }
        out += std::string(key) + " = " + toml_text(value) + "\n";
      });
  return out;
}

std::vector<std::string> recipe_keys() {
  std::vector<std::string> names;
  for (const KeyName& name : all_keys()) names.push_back(name.section + "." + name.key);
  return names;
}

}  // namespace ffcv::train
