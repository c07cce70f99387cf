// RecipeSchema: the one table of a recipe's keys (section, key, where the value lives, what it
// must satisfy) from which a TOML recipe is read, `--set` overrides are applied, the resolved
// recipe is written back and the valid keys are listed.
//
// Every kind of recipe (the training recipe of recipe.hpp, the SAGA recipe of
// ffcv/saga/saga_recipe.hpp) describes its keys as such a table, once, and gets the same strict
// reading: an unknown section or key, a value of the wrong type, an out-of-range number or an
// unknown choice is a ffcv::ConfigError whose one-line message names the file, line:column (or
// the `--set` argument) and key, and suggests the nearest valid name for a typo.
//
// Independent of LibTorch and of TOML++ in its interface.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/settings/rule.hpp"

namespace ffcv::train {

// Where one key's value lives: a member of the recipe struct, of one of these types.
using FieldSlot =
    std::variant<std::string*, int*, std::uint64_t*, double*, bool*, std::vector<std::string>*,
                 std::vector<double>*, std::array<double, 2>*, std::array<double, 3>*>;

struct SchemaField {
  std::string_view section, key;
  FieldSlot slot;
  Rule rule;
  // Set for an old spelling of a key: the key's name now. Reading the old one stores into the
  // same slot and prints a note naming the new one once; it is never written back or listed.
  std::string_view renamed_to = {};
};

// Every key in documentation order; sections appear in one contiguous run each.
using RecipeSchema = std::vector<SchemaField>;

// Appends the loader's settings (ffcv/settings/loader_settings.hpp) as keys of `section`, with
// their old spellings (`workers` for `num_workers`, ...) as renamed keys.
void add_loader_settings(RecipeSchema& schema, std::string_view section, LoaderSettings& settings);

// Parses `text` (the recipe file at `path`) as TOML and stores every key into its slot.
// Top-level tables named in `ignored_sections` are left for someone else (a [grid]).
// Throws ConfigError.
void apply_recipe_text(const std::string& text, const std::string& path, const RecipeSchema& schema,
                       std::span<const std::string_view> ignored_sections = {});

// Applies one "section.key=value" override. The value is read as TOML if it is one (and nothing
// more), else as a plain string; string keys take the text as is. Throws ConfigError.
void apply_recipe_override(const std::string& text, const RecipeSchema& schema);

// "section.key" of every key, in schema order.
std::vector<std::string> schema_keys(const RecipeSchema& schema);

// The values as TOML, every key written out, one [section] after another, so that reading the
// text back gives the same values (floats in shortest round-trip digits).
std::string schema_to_toml(const RecipeSchema& schema);

// schema_to_toml under a comment naming the recipe: "# The resolved KIND NAME, every key
// written out." and "# Read from SOURCE." (each part left out when empty).
std::string resolved_recipe_toml(const RecipeSchema& schema, std::string_view kind,
                                 const std::string& name, const std::string& source);

// The text of the recipe file at `path`: ConfigError "recipe not found: PATH", or one naming
// the read error.
std::string read_recipe_text(const std::string& path);

// "dir/rn50_16_epochs.toml" -> "rn50_16_epochs" (the run's name).
std::string recipe_file_stem(const std::string& path);

}  // namespace ffcv::train
