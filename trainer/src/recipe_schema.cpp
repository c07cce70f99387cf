#include "ffcv/train/recipe_schema.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

#include "ffcv/train/override_error.hpp"
#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"

namespace ffcv::train {

namespace {

std::vector<std::string> all_sections(const RecipeSchema& schema) {
  std::vector<std::string> sections;
  for (const SchemaField& field : schema) {
    if (sections.empty() || sections.back() != field.section) {
      sections.emplace_back(field.section);
    }
  }
  return sections;
}

bool is_section(const RecipeSchema& schema, std::string_view section) {
  return std::any_of(schema.begin(), schema.end(),
                     [&](const SchemaField& field) { return field.section == section; });
}

// Short typos are common and short names are close to everything: allow about one edit per two
// characters, at most three.
std::size_t suggestion_distance(std::string_view name) {
  return std::min<std::size_t>(3, std::max<std::size_t>(1, (name.size() + 1) / 2));
}

// The valid "section.key" nearest to a mistyped one: a key of the same section first, then a key
// of another section ("[training] lr" -> "lr.lr"), then the nearest full name ("trainig.epochs"
// -> "training.epochs").
std::string suggest_key(const RecipeSchema& schema, std::string_view section,
                        std::string_view key) {
  std::vector<std::string> same_section, key_names, full_names;
  for (const SchemaField& field : schema) {
    if (!field.renamed_to.empty()) continue;
    if (field.section == section) same_section.emplace_back(field.key);
    key_names.emplace_back(field.key);
    full_names.push_back(std::string(field.section) + "." + std::string(field.key));
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

// A TOML float literal that reads back as exactly `value` (shortest round-trip digits).
std::string toml_float(double value) {
  std::string text = format_number(value);
  if (text.find_first_of(".eEni") == std::string::npos) text += ".0";
  return text;
}

// JSON's string escapes are TOML basic-string escapes too.
std::string toml_string(std::string_view text) { return json_quote(text); }

std::string toml_text(const std::string* value) { return toml_string(*value); }
std::string toml_text(const int* value) { return std::to_string(*value); }
std::string toml_text(const std::uint64_t* value) { return std::to_string(*value); }
std::string toml_text(const double* value) { return toml_float(*value); }
std::string toml_text(const bool* value) { return *value ? "true" : "false"; }
std::string toml_text(const std::vector<std::string>* values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values->size(); ++i) {
    text += (i ? ", " : "") + toml_string((*values)[i]);
  }
  return text + "]";
}
template <class Numbers>
std::string toml_text(const Numbers* values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values->size(); ++i) {
    text += (i ? ", " : "") + toml_float((*values)[i]);
  }
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

void check_range(double value, const Rule& rule, const Site& site, const toml::node& node,
                 const std::string& name) {
  if (!in_range(value, rule)) {
    fail(site, node, name + " must be " + range_text(rule) + ", got " + format_number(value));
  }
}

// Reading one value into its slot: one overload per slot type.

void read_value(const toml::node& node, std::string* out, const Site& site, const std::string& name,
                const Rule& rule) {
  if (const auto* text = node.as_string()) {
    *out = text->get();
  } else if (site.raw) {
    *out = *site.raw;
  } else {
    wrong_type(site, node, name, "a string");
  }
  if (rule.non_empty && out->empty()) fail(site, node, name + " must not be empty");
  if (rule.choices.empty()) return;
  std::string allowed;
  for (std::string_view choice : rule.choices) {
    if (choice == *out) return;
    allowed += (allowed.empty() ? "" : ", ") + std::string(choice);
  }
  fail(site, node, name + " must be one of " + allowed + "; got " + toml_string(*out));
}

std::int64_t read_integer(const toml::node& node, const Site& site, const std::string& name) {
  const auto* integer = node.as_integer();
  if (integer == nullptr) wrong_type(site, node, name, "an integer");
  return integer->get();
}

void read_value(const toml::node& node, int* out, const Site& site, const std::string& name,
                const Rule& rule) {
  const std::int64_t value = read_integer(node, site, name);
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    fail(site, node, name + " is out of range: " + std::to_string(value));
  }
  check_range(static_cast<double>(value), rule, site, node, name);
  *out = static_cast<int>(value);
}

void read_value(const toml::node& node, std::uint64_t* out, const Site& site,
                const std::string& name, const Rule& rule) {
  const std::int64_t value = read_integer(node, site, name);
  if (value < 0) fail(site, node, name + " must be >= 0, got " + std::to_string(value));
  check_range(static_cast<double>(value), rule, site, node, name);
  *out = static_cast<std::uint64_t>(value);
}

// A list of strings; `non_empty` applies to each of them.
void read_value(const toml::node& node, std::vector<std::string>* out, const Site& site,
                const std::string& name, const Rule& rule) {
  const auto* array = node.as_array();
  if (array == nullptr) wrong_type(site, node, name, "an array of strings");
  std::vector<std::string> values;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const auto* text = element.as_string();
    if (text == nullptr) {
      wrong_type(site, element, name + "[" + std::to_string(i) + "]", "a string");
    }
    if (rule.non_empty && text->get().empty()) {
      fail(site, element, name + "[" + std::to_string(i) + "] must not be empty");
    }
    values.push_back(text->get());
  }
  *out = std::move(values);
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
  if (!std::isfinite(value)) {
    fail(site, node, name + " must be a finite number, got " + describe(node));
  }
  check_range(value, rule, site, node, name);
  return value;
}

void read_value(const toml::node& node, double* out, const Site& site, const std::string& name,
                const Rule& rule) {
  *out = read_number(node, site, name, rule);
}

void read_value(const toml::node& node, bool* out, const Site& site, const std::string& name,
                const Rule&) {
  const auto* boolean = node.as_boolean();
  if (boolean == nullptr) wrong_type(site, node, name, "true or false");
  *out = boolean->get();
}

// Numbers of an array, each checked against the rule; `count` 0 accepts any length.
std::vector<double> read_numbers(const toml::node& node, const Site& site, const std::string& name,
                                 const Rule& rule, std::size_t count) {
  const std::string expected =
      count == 0 ? "an array of numbers" : "an array of " + std::to_string(count) + " numbers";
  const auto* array = node.as_array();
  if (array == nullptr) wrong_type(site, node, name, expected);
  if (count != 0 && array->size() != count) {
    fail(site, node,
         name + " must be " + expected + ", got " + std::to_string(array->size()) + " values");
  }
  std::vector<double> values;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    if (!element.is_number()) wrong_type(site, element, name, expected);
    values.push_back(read_number(element, site, name + "[" + std::to_string(i) + "]", rule));
  }
  return values;
}

void read_value(const toml::node& node, std::vector<double>* out, const Site& site,
                const std::string& name, const Rule& rule) {
  *out = read_numbers(node, site, name, rule, 0);
}

template <std::size_t N>
void read_value(const toml::node& node, std::array<double, N>* out, const Site& site,
                const std::string& name, const Rule& rule) {
  const std::vector<double> values = read_numbers(node, site, name, rule, N);
  std::array<double, N> fixed{};
  std::copy(values.begin(), values.end(), fixed.begin());
  if constexpr (N == 2) {
    if (rule.ordered && fixed[0] > fixed[1]) {
      fail(site, node, name + " must be [low, high] with low <= high, got " + toml_text(&fixed));
    }
  }
  *out = fixed;
}

// Stores `node` in the slot of section.key; false when there is no such key.
bool assign(const RecipeSchema& schema, std::string_view section, std::string_view key,
            const toml::node& node, const Site& site) {
  for (const SchemaField& field : schema) {
    if (field.section != section || field.key != key) continue;
    const std::string name =
        std::string(section) + "." + std::string(field.renamed_to.empty() ? key : field.renamed_to);
    if (!field.renamed_to.empty()) {
      note_renamed_once(std::string(section) + "." + std::string(key), name);
    }
    std::visit([&](auto* slot) { read_value(node, slot, site, name, field.rule); }, field.slot);
    return true;
  }
  return false;
}

std::string position(const std::string& path, const toml::source_region& region) {
  return path + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

}  // namespace

void add_loader_settings(RecipeSchema& schema, std::string_view section, LoaderSettings& settings) {
  const std::vector<SettingRow> rows = loader_setting_rows(settings);
  for (const SettingRow& row : rows) {
    std::visit(
        [&](auto* slot) {
          schema.push_back({section, row.name, slot, row.rule});
        },
        row.slot);
  }
  // Old spellings that take the same value; the flag-like ones (keep_last, process_cache) and
  // sizes with suffixes (cache_budget) were never recipe keys.
  for (const SettingAlias& alias : loader_setting_aliases()) {
    if (alias.value != SettingAlias::Value::kSame) continue;
    for (const SettingRow& row : rows) {
      if (row.name != alias.name) continue;
      std::visit(
          [&](auto* slot) {
            schema.push_back({section, alias.old_name, slot, row.rule, row.name});
          },
          row.slot);
    }
  }
}

void apply_recipe_text(const std::string& text, const std::string& path, const RecipeSchema& schema,
                       std::span<const std::string_view> ignored_sections) {
  toml::table root;
  try {
    root = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& error) {
    throw ConfigError(position(path, error.source()) +
                      ": TOML syntax error: " + std::string(error.description()));
  }
  Site site;
  site.path = &path;
  for (const auto& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    if (std::find(ignored_sections.begin(), ignored_sections.end(), section) !=
        ignored_sections.end()) {
      continue;
    }
    if (!is_section(schema, section)) {
      if (section_node.is_table()) {
        const std::string best =
            closest_name(section, all_sections(schema), suggestion_distance(section));
        throw ConfigError(position(path, section_key.source()) + ": unknown section [" + section +
                          "]" + (best.empty() ? "" : " (did you mean [" + best + "]?)"));
      }
      throw ConfigError(position(path, section_key.source()) + ": key '" + section +
                        "' is outside any section" +
                        did_you_mean(suggest_key(schema, "", section)));
    }
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      throw ConfigError(position(path, section_key.source()) + ": '" + section +
                        "' must be a table ([" + section + "]), got " + describe(section_node));
    }
    for (const auto& [key, value] : *table) {
      if (!assign(schema, section, key.str(), value, site)) {
        throw ConfigError(position(path, key.source()) + ": unknown key '" +
                          std::string(key.str()) + "' in [" + section + "]" +
                          did_you_mean(suggest_key(schema, section, key.str())));
      }
    }
  }
}

namespace {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), as TOML requires of a document: a value that is not would be written into the run's
// recipe.toml and make it unreadable.
bool is_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    int length = 0;
    std::uint32_t code = 0;
    if (byte < 0x80) {
      ++i;
      continue;
    } else if ((byte & 0xe0) == 0xc0) {
      length = 2, code = byte & 0x1f;
    } else if ((byte & 0xf0) == 0xe0) {
      length = 3, code = byte & 0x0f;
    } else if ((byte & 0xf8) == 0xf0) {
      length = 4, code = byte & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = code << 6 | (next & 0x3f);
    }
    static constexpr std::uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

void apply_override(const std::string& text, const RecipeSchema& schema) {
  if (!is_utf8(text)) {
    throw ConfigError(
        "--set: an override is not valid UTF-8 text (TOML, and the run's "
        "recipe.toml, hold only UTF-8)");
  }
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

  if (dot == std::string::npos && is_section(schema, name)) {
    throw ConfigError(prefix + "'" + name + "' is a section; give one key as " + name +
                      ".KEY=VALUE");
  }
  Site site;
  site.override_text = text;
  site.raw = value;
  if (dot == std::string::npos || !assign(schema, section, key, node, site)) {
    throw ConfigError(prefix + "unknown key '" + name + "'" +
                      did_you_mean(suggest_key(schema, section, key)));
  }
}

}  // namespace

// Every refusal of an override is an OverrideError (override_error.hpp): the command line that
// gave it is at fault, not the recipe file.
void apply_recipe_override(const std::string& text, const RecipeSchema& schema) {
  try {
    apply_override(text, schema);
  } catch (const ConfigError& error) {
    throw OverrideError(error.what());
  }
}

std::vector<std::string> schema_keys(const RecipeSchema& schema) {
  std::vector<std::string> names;
  for (const SchemaField& field : schema) {
    if (!field.renamed_to.empty()) continue;
    names.push_back(std::string(field.section) + "." + std::string(field.key));
  }
  return names;
}

std::string schema_to_toml(const RecipeSchema& schema) {
  std::string out;
  std::string_view current;
  for (const SchemaField& field : schema) {
    if (!field.renamed_to.empty()) continue;
    if (field.section != current) {
      out += "\n[" + std::string(field.section) + "]\n";
      current = field.section;
    }
    out += std::string(field.key) + " = " +
           std::visit([](const auto* slot) { return toml_text(slot); }, field.slot) + "\n";
  }
  return out;
}

std::string resolved_recipe_toml(const RecipeSchema& schema, std::string_view kind,
                                 const std::string& name, const std::string& source) {
  std::string out = "# The resolved " + std::string(kind);
  if (!name.empty()) out += " " + name;
  out += ", every key written out.\n";
  if (!source.empty()) out += "# Read from " + source + ".\n";
  return out + schema_to_toml(schema);
}

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

std::string recipe_file_stem(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot != 0) name.resize(dot);
  return name;
}

}  // namespace ffcv::train
