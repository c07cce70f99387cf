// LoaderSettings: the loader's user-facing settings, one spelling each, in one table.
//
// Every front end reads the same table (loader_setting_rows): the training recipe's and the SAGA
// recipe's [data] sections (key `data.NAME`), the `ffcv bench`/`doctor` flags (`--NAME` with
// dashes for underscores), `ffcv ablate`'s keys (NAME) and the Python package's keyword
// arguments (NAME). A row is the setting's name, where its value lives, the rule the value must
// satisfy, a one-line doc and how the value reaches LoaderOptions; its default is the value of a
// default-constructed LoaderSettings (a front end may start from other values, e.g. SAGA's
// random order). Adding a setting takes its LoaderOptions field, its member here and its row in
// loader_settings.cpp: the front ends and their tests pick it up from the table.
//
// loader_options() is the one translation from settings to LoaderOptions: it decides, exactly
// once for every front end, that a URL is read through the process cache, and what 0 workers
// means (one per core this loader may use).
//
// Old spellings (`workers`, `--keep-last`, `--cache-budget 1G`, ...) stay as aliases: each front
// end maps them through loader_setting_aliases() and prints, once per process, the new name.
//
// No TOML, no LibTorch: the table is plain data over the struct's members.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ffcv/loader.hpp"
#include "ffcv/settings/rule.hpp"

namespace ffcv {

struct LoaderSettings {
  int num_workers = 0;                 // decoding threads; 0: one per core the loader may use
  std::string order = "sequential";    // sequential | random | quasi_random
  std::uint64_t seed = 0;              // of the order and of every random operation
  int window_pages = 0;                // QUASI_RANDOM pages open at once; 0: see loader_options
  int batches_ahead = 3;               // batches prepared ahead of the consumer
  bool drop_last = true;               // leave out each epoch's last, short batch
  bool os_cache = true;                // true: mmap (OS page cache); false: the process cache
  int cache_budget_mib = 1024;         // process cache: resident pages at most, MiB
  int cache_readers = 4;               // process cache: reads in flight
  double storage_latency_ms = 0;       // process cache: simulated latency per read
  double storage_bandwidth_mbs = 0;    // process cache: simulated bandwidth, MB/s; 0: unlimited
  std::string on_error = "fail";       // a sample that fails to decode: fail | skip
  double max_skipped_fraction = 0.01;  // with on_error = skip: the share of an epoch that may fail
  // Remote files (http(s):// URLs): storage/range_reader.hpp's HttpOptions; 0: the FFCV_HTTP_*
  // variable, else the default (10 s, 15 s, 300 s, 4 attempts).
  double http_connect_timeout_s = 0;
  double http_stall_timeout_s = 0;
  double http_request_timeout_s = 0;
  int http_attempts = 0;

  bool operator==(const LoaderSettings&) const = default;
};

// Where one setting's value lives: a member of a LoaderSettings.
using SettingSlot = std::variant<std::string*, int*, std::uint64_t*, double*, bool*>;

struct LoaderPlace;

struct SettingRow {
  std::string_view name;  // with underscores; flags spell it with dashes
  SettingSlot slot;
  Rule rule;
  std::string_view doc;  // one line
  // How the setting reaches LoaderOptions (loader_options runs every row's).
  void (*apply)(const LoaderSettings& settings, const LoaderPlace& place, LoaderOptions& options);
};

// Every setting of `settings`, in documentation order.
std::vector<SettingRow> loader_setting_rows(LoaderSettings& settings);

// The names of every setting, in table order.
std::vector<std::string> loader_setting_names();

// The value as a command line or a table writes it: "true", "4", "0.01", "quasi_random".
std::string setting_text(const SettingSlot& slot);
// The kind of value, for usage lines: "N", "X", "true|false" or the choices "a|b|c".
std::string setting_value_name(const SettingRow& row);

// Sets the row's value from text ("4", "0.5", "true", "random"), checking its type and rule.
// Throws ConfigError "NAME must be ..." (the caller adds where the text came from).
void set_setting(const SettingRow& row, std::string_view text);

// An old spelling of a setting, kept so that existing recipes, specs and scripts work.
struct SettingAlias {
  enum class Value {
    kSame,         // the same value
    kNegatedFlag,  // a flag whose presence sets the setting to false (keep_last -> drop_last)
    kSizeInMib,    // a size with an optional suffix ("512M", "1G") -> a whole number of MiB
  };
  std::string_view old_name;  // with underscores
  std::string_view name;      // the setting it stands for
  Value value = Value::kSame;
};

const std::vector<SettingAlias>& loader_setting_aliases();
// The alias spelled `old_name` (underscores), or null.
const SettingAlias* find_setting_alias(std::string_view old_name);
// The setting's value text for the alias's value text: a negated flag's "true" is "false",
// "512M" is "512". Throws ConfigError naming the alias for a value it cannot translate.
std::string alias_value(const SettingAlias& alias, std::string_view text);
// Prints "note: OLD is now spelled NEW" on stderr, once per process for each pair.
void note_renamed_once(const std::string& old_spelling, const std::string& new_spelling);

// Where a loader reads and for whom: the file, the batch size, the shard of this rank, and how
// many cores the workers may use.
struct LoaderPlace {
  std::string location;  // a path or an http(s):// URL
  std::uint64_t batch_size = 256;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  int cores = 0;  // cores this loader's workers share; 0: every available core
};

// The cores each of `shares` users of this machine (its ranks, a grid's groups) may use: the
// available cores divided among them, at least 1.
int cores_per_share(int shares);

// The worker threads for `num_workers`: itself, or for 0 the place's cores (every available
// core when that is 0 too), at least 1.
int resolve_workers(int num_workers, int cores);

// The one translation of settings into LoaderOptions. A URL is always read through the process
// cache (nothing can map a file on another machine); 0 workers become resolve_workers(0,
// place.cores). window_pages 0 is left to the loader, which takes, for QUASI_RANDOM over the
// process cache, the largest window whose epochs fit the budget, and otherwise FFCV's rule (2 x
// batch size). default_pipelines is false: a front end names its outputs. Throws ConfigError for
// an unknown order or on_error, or a rank not below the world size.
LoaderOptions loader_options(const LoaderSettings& settings, const LoaderPlace& place);

}  // namespace ffcv
