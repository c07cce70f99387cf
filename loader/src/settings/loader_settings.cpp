#include "ffcv/settings/loader_settings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <set>

#include "ffcv/storage/range_reader.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

// One row per setting: its name, where its value lives, its rule, its doc, and how it reaches
// LoaderOptions. A new setting is its LoaderOptions field, its member and this row. (Long as a
// table is: one entry per setting, nothing else.)
std::vector<SettingRow> loader_setting_rows(LoaderSettings& s) {
  using O = LoaderOptions;
  using S = LoaderSettings;
  using P = LoaderPlace;
  return {
      {"num_workers", &s.num_workers, between(0, 1024),
       "decoding threads (0: one per core the loader may use)",
       [](const S& v, const P& p, O& o) {
         o.num_workers = resolve_workers(v.num_workers, p.cores);
       }},
      {"order", &s.order, one_of({"sequential", "random", "quasi_random"}),
       "the order of samples in an epoch",
       [](const S& v, const P&, O& o) { o.order.kind = parse_order_kind(v.order); }},
      {"seed", &s.seed, any(), "seed of the order and of every random operation",
       [](const S& v, const P&, O& o) { o.order.seed = v.seed; }},
      {"window_pages", &s.window_pages, between(0, 1 << 20),
       "QUASI_RANDOM: pages open at once (0: the most the process cache's budget holds, "
       "else 2 x batch size)",
       [](const S& v, const P&, O& o) {
         o.order.window_pages = static_cast<std::uint64_t>(v.window_pages);
       }},
      {"batches_ahead", &s.batches_ahead, between(0, 64), "batches prepared ahead of the consumer",
       [](const S& v, const P&, O& o) {
         o.batches_ahead = static_cast<std::uint64_t>(v.batches_ahead);
       }},
      {"drop_last", &s.drop_last, any(), "leave out each epoch's last, short batch",
       [](const S& v, const P&, O& o) { o.drop_last = v.drop_last; }},
      {"os_cache", &s.os_cache, any(),
       "true: map the file (OS page cache); false: the process cache (always, for a URL)",
       // A file on another machine cannot be mapped: a URL always goes through the process cache.
       [](const S& v, const P& p, O& o) { o.os_cache = v.os_cache && !is_url(p.location); }},
      {"cache_budget_mib", &s.cache_budget_mib, between(1, 1 << 20),
       "process cache: resident pages at most, MiB",
       [](const S& v, const P&, O& o) {
         o.cache.budget_bytes = static_cast<std::uint64_t>(v.cache_budget_mib) << 20;
       }},
      {"cache_readers", &s.cache_readers, between(1, 256),
       "process cache: reads in flight (HTTP connections for a URL)",
       [](const S& v, const P&, O& o) { o.cache.reader_threads = v.cache_readers; }},
      {"storage_latency_ms", &s.storage_latency_ms, between(0, 60000),
       "process cache: simulated storage latency per read, ms",
       [](const S& v, const P&, O& o) {
         o.cache.throttle.latency_seconds = v.storage_latency_ms / 1000;
       }},
      {"storage_bandwidth_mbs", &s.storage_bandwidth_mbs, between(0, 1000000),
       "process cache: simulated storage bandwidth, MB/s (0: unlimited)",
       [](const S& v, const P&, O& o) {
         o.cache.throttle.bandwidth_bytes_per_s = v.storage_bandwidth_mbs * 1e6;
       }},
      {"on_error", &s.on_error, one_of({"fail", "skip"}),
       "a sample that fails to decode: stop, or leave it out of its batch",
       [](const S& v, const P&, O& o) { o.on_error = parse_on_sample_error(v.on_error); }},
      {"max_skipped_fraction", &s.max_skipped_fraction, between(0, 1),
       "with on_error = skip: the share of an epoch that may be left out",
       [](const S& v, const P&, O& o) { o.max_skipped_fraction = v.max_skipped_fraction; }},
      {"http_connect_timeout_s", &s.http_connect_timeout_s, between(0, 3600),
       "a URL: seconds to connect (0: $FFCV_HTTP_CONNECT_TIMEOUT, else 10)",
       [](const S& v, const P&, O& o) {
         if (v.http_connect_timeout_s > 0)
           o.cache.http.connect_timeout_seconds = v.http_connect_timeout_s;
       }},
      {"http_stall_timeout_s", &s.http_stall_timeout_s, between(0, 3600),
       "a URL: seconds under 1 KiB/s before a request is abandoned (0: $FFCV_HTTP_STALL_TIMEOUT, "
       "else 15)",
       [](const S& v, const P&, O& o) {
         if (v.http_stall_timeout_s > 0)
           o.cache.http.stall_timeout_seconds = v.http_stall_timeout_s;
       }},
      {"http_request_timeout_s", &s.http_request_timeout_s, between(0, 86400),
       "a URL: seconds one request may take (0: $FFCV_HTTP_REQUEST_TIMEOUT, else 300)",
       [](const S& v, const P&, O& o) {
         if (v.http_request_timeout_s > 0) {
           o.cache.http.request_timeout_seconds = v.http_request_timeout_s;
         }
       }},
      {"http_attempts", &s.http_attempts, between(0, 100),
       "a URL: attempts per range, the first included (0: $FFCV_HTTP_ATTEMPTS, else 4)",
       [](const S& v, const P&, O& o) {
         if (v.http_attempts > 0) o.cache.http.max_attempts = v.http_attempts;
       }},
  };
}

std::vector<std::string> loader_setting_names() {
  LoaderSettings defaults;
  std::vector<std::string> names;
  for (const SettingRow& row : loader_setting_rows(defaults)) names.emplace_back(row.name);
  return names;
}

namespace {

struct TextOf {
  std::string operator()(const std::string* value) const { return *value; }
  std::string operator()(const int* value) const { return std::to_string(*value); }
  std::string operator()(const std::uint64_t* value) const { return std::to_string(*value); }
  std::string operator()(const double* value) const { return format_number(*value); }
  std::string operator()(const bool* value) const { return *value ? "true" : "false"; }
};

[[noreturn]] void refuse(const SettingRow& row, const std::string& what, std::string_view text) {
  throw ConfigError(std::string(row.name) + " must be " + what + ", got \"" + std::string(text) +
                    "\"");
}

std::int64_t parse_integer(const SettingRow& row, std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    refuse(row, "a whole number", text);
  }
  return value;
}

void check_bounds(const SettingRow& row, double value, std::string_view text) {
  if (!in_range(value, row.rule)) refuse(row, range_text(row.rule), text);
}

struct SetFrom {
  const SettingRow& row;
  std::string_view text;

  void operator()(std::string* value) const {
    if (row.rule.non_empty && text.empty()) refuse(row, "non-empty", text);
    if (!is_choice(text, row.rule)) refuse(row, "one of " + choices_text(row.rule), text);
    *value = std::string(text);
  }
  void operator()(int* value) const {
    const std::int64_t number = parse_integer(row, text);
    if (number < std::numeric_limits<int>::min() || number > std::numeric_limits<int>::max()) {
      refuse(row, range_text(row.rule).empty() ? "a 32-bit number" : range_text(row.rule), text);
    }
    check_bounds(row, static_cast<double>(number), text);
    *value = static_cast<int>(number);
  }
  void operator()(std::uint64_t* value) const {
    const std::int64_t number = parse_integer(row, text);
    if (number < 0) refuse(row, ">= 0", text);
    check_bounds(row, static_cast<double>(number), text);
    *value = static_cast<std::uint64_t>(number);
  }
  void operator()(double* value) const {
    double number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || text.empty() ||
        !std::isfinite(number)) {
      refuse(row, "a number", text);
    }
    check_bounds(row, number, text);
    *value = number;
  }
  void operator()(bool* value) const {
    if (text != "true" && text != "false") refuse(row, "true or false", text);
    *value = text == "true";
  }
};

}  // namespace

std::string setting_text(const SettingSlot& slot) { return std::visit(TextOf{}, slot); }

std::string setting_value_name(const SettingRow& row) {
  if (std::holds_alternative<bool*>(row.slot)) return "true|false";
  if (!row.rule.choices.empty()) {
    std::string text;
    for (std::string_view choice : row.rule.choices) {
      text += (text.empty() ? "" : "|") + std::string(choice);
    }
    return text;
  }
  if (std::holds_alternative<double*>(row.slot)) return "X";
  if (std::holds_alternative<std::string*>(row.slot)) return "TEXT";
  return "N";
}

void set_setting(const SettingRow& row, std::string_view text) {
  std::visit(SetFrom{row, text}, row.slot);
}

const std::vector<SettingAlias>& loader_setting_aliases() {
  using Value = SettingAlias::Value;
  static const std::vector<SettingAlias> aliases = {
      {"workers", "num_workers", Value::kSame},
      {"keep_last", "drop_last", Value::kNegatedFlag},
      {"process_cache", "os_cache", Value::kNegatedFlag},
      {"cache_budget", "cache_budget_mib", Value::kSizeInMib},
      {"readers", "cache_readers", Value::kSame},
      {"latency_ms", "storage_latency_ms", Value::kSame},
      {"bandwidth_mbs", "storage_bandwidth_mbs", Value::kSame},
  };
  return aliases;
}

const SettingAlias* find_setting_alias(std::string_view old_name) {
  for (const SettingAlias& alias : loader_setting_aliases()) {
    if (alias.old_name == old_name) return &alias;
  }
  return nullptr;
}

std::string alias_value(const SettingAlias& alias, std::string_view text) {
  switch (alias.value) {
    case SettingAlias::Value::kSame:
      return std::string(text);
    case SettingAlias::Value::kNegatedFlag:
      if (text == "true") return "false";
      if (text == "false") return "true";
      throw ConfigError(std::string(alias.old_name) + " is a flag: true or false, got \"" +
                        std::string(text) + "\"");
    case SettingAlias::Value::kSizeInMib: {
      const std::optional<std::uint64_t> bytes = parse_byte_size(std::string(text));
      if (!bytes || *bytes % (1ull << 20) != 0) {
        throw ConfigError(std::string(alias.old_name) +
                          " must be a whole number of MiB such as 512M or 2G, got \"" +
                          std::string(text) + "\"; " + std::string(alias.name) +
                          " takes the MiB alone");
      }
      return std::to_string(*bytes >> 20);
    }
  }
  return std::string(text);
}

void note_renamed_once(const std::string& old_spelling, const std::string& new_spelling) {
  static std::mutex mutex;
  static std::set<std::string> noted;
  std::lock_guard lock(mutex);
  if (!noted.insert(old_spelling + "\n" + new_spelling).second) return;
  std::fprintf(stderr, "note: %s is now spelled %s\n", old_spelling.c_str(), new_spelling.c_str());
}

int cores_per_share(int shares) { return std::max(1, available_cores() / std::max(1, shares)); }

int resolve_workers(int num_workers, int cores) {
  if (num_workers > 0) return num_workers;
  return std::max(1, resolve_worker_count(cores));
}

LoaderOptions loader_options(const LoaderSettings& settings, const LoaderPlace& place) {
  if (place.world_size == 0 || place.rank >= place.world_size) {
    throw ConfigError("rank " + std::to_string(place.rank) + " is not below the world size " +
                      std::to_string(place.world_size));
  }
  LoaderOptions options;
  options.batch_size = place.batch_size;
  options.order.rank = place.rank;
  options.order.world_size = place.world_size;
  options.order.batch_size = place.batch_size;
  options.default_pipelines = false;
  LoaderSettings copy = settings;  // the rows point into a settings object; they only read it
  for (const SettingRow& row : loader_setting_rows(copy)) row.apply(settings, place, options);
  return options;
}

}  // namespace ffcv
