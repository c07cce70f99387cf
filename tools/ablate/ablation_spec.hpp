// An ablation spec: which dataset, which fixed settings, and which settings to sweep.
//
//   [dataset]                        where the samples come from
//   source = "imagenet-like"         imagenet-like | folder | fashion-mnist | beton
//   count = 2000                     imagenet-like: images (and classes = 100, seed = 0)
//   path = "DIR or FILE"             folder: the image folder; fashion-mnist: the IDX directory
//                                    (default: Debian's); beton: the .beton (no writer settings)
//
//   [write]                          fixed writer settings (`ffcv write` options)
//   [bench]                          fixed loader settings (`ffcv bench` options)
//   [sweep]                          the axes: each key a list of values; every combination is
//                                    one cell
//
// or, to measure training instead of loading (each cell one `ffcv run`, accuracy included):
//
//   [train]
//   recipe = "recipes/fashion_mnist.toml"
//   set = ["training.epochs=2"]      fixed overrides, as `--set` takes them (optional)
//   [sweep]
//   "data.order" = ["random", "quasi_random"]   recipe keys (section.key), and writer keys
//
// A training sweep has no [bench] (loader settings are recipe keys: data.num_workers,
// data.os_cache, ...); its [dataset] is optional: without one the recipe's data is used, with
// one the file written for the cell becomes data.train (data.val stays the recipe's).
//
// A key of [write], [bench] or [sweep] is an option of `ffcv write` or `ffcv bench` without its
// dashes, with underscores (`max_resolution`, `image_size`); the loader's settings are spelled as
// everywhere else (`num_workers`, `os_cache`, `cache_budget_mib`: the table of
// ffcv/settings/loader_settings.hpp), their old spellings (`workers`, `process_cache = true`,
// `cache_budget = "512M"`) read as the new ones with a note. Which command a key belongs to is
// known from kWriterKeys / kBenchKeys. Booleans are flags (true: given), except the settings
// that take true or false (`drop_last`, `os_cache`). Besides bench's own options, `cold = true`
// drops the file's pages from the OS page cache before each epoch.
//
// Every problem (an unknown key, with the closest known one; a sweep axis without values; a
// writer setting over a `beton` source; a value the command would refuse, such as num_workers = -1,
// batch_size = 0, a string where a number belongs or a number for a flag) is a ConfigError
// naming the spec file and the key, raised before any work. Values are checked by the very
// option parsers of `ffcv write` and `ffcv bench`, so they accept exactly what those accept.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ffcv/train/folder_provenance.hpp"

namespace ffcv::tools {

// One setting's value, as the command line would spell it ("2", "quasi_random", "true").
struct SettingValue {
  std::string text;
  bool is_bool = false;
  bool operator==(const SettingValue&) const = default;
};

using Settings = std::map<std::string, SettingValue>;  // key (with underscores) -> value

struct DatasetSpec {
  std::string source;  // imagenet-like | folder | fashion-mnist | beton; "" for the recipe's
  std::uint64_t count = 2000;
  int classes = 100;
  std::uint64_t seed = 0;
  std::string path;
};

struct SweepAxis {
  std::string key;
  std::vector<SettingValue> values;
};

struct AblationSpec {
  std::string path;  // the spec file
  std::string name;  // its file name without extension: the default output folder's name
  DatasetSpec dataset;
  Settings write;
  Settings bench;
  std::string recipe;                   // [train] recipe: a training sweep when not empty
  std::vector<std::string> recipe_set;  // [train] set: fixed "section.key=value" overrides
  std::vector<SweepAxis> axes;          // in the order of the spec file

  bool training() const { return !recipe.empty(); }
};

// One point of the sweep: its values of the axes, and every setting it runs with.
struct AblationCell {
  std::vector<SettingValue> axis_values;  // one per axis
  Settings write;                         // fixed and swept writer settings
  Settings bench;                         // fixed and swept bench settings
  Settings recipe;                        // training sweeps: [train] set and the swept recipe keys
  std::string recipe_path;                // training sweeps: the recipe
  // The dataset's identity: the writer settings as text; cells that share it share a .beton.
  std::string dataset_key() const;
  // Everything the cell's measurement depends on: its results are reused for the same key.
  std::string key() const;
};

extern const std::vector<std::string> kWriterKeys;
extern const std::vector<std::string> kBenchKeys;

// Reads and checks a spec file. Throws ConfigError (also for a folder given as the spec), or
// IoError when it cannot be read.
AblationSpec load_ablation_spec(const std::string& path);

// `--max-resolution 256` / `--flip`: settings as the command-line arguments of write or bench.
std::vector<std::string> setting_arguments(const Settings& settings);

// What the sweep's results depend on beyond each cell's own settings, for the output folder's
// record (folder_provenance.hpp): the [dataset] section and the identity of the data it names
// (a .beton's tables, an image folder's files); for a training sweep the recipe with its fixed
// `set` (swept keys left out) and the identity of its data files.
train::Provenance ablation_provenance(const AblationSpec& spec);

// The product of the axes, the first axis varying slowest.
std::vector<AblationCell> expand_cells(const AblationSpec& spec);

// A training cell's `ffcv run` overrides ("section.key=value"): [train] set and its recipe keys.
std::vector<std::string> recipe_overrides(const AblationCell& cell);

// Loads the recipe of every cell of a training sweep with its overrides, so that a value the
// recipe refuses is a ConfigError naming the cell before any work. Nothing for bench sweeps.
void check_training_cells(const AblationSpec& spec, const std::vector<AblationCell>& cells);

// "num_workers=2 os_cache=false": the cell's axis values, for progress lines and tables.
std::string cell_label(const AblationSpec& spec, const AblationCell& cell);

}  // namespace ffcv::tools
