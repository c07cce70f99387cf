// The loader's settings table (ffcv/settings/loader_settings.hpp): one spelling per setting, one
// translation into LoaderOptions, and every setting reaching every front end (training recipes,
// `ffcv bench`/`doctor` flags, ablation specs) from its one row; the old spellings still work,
// with a note; docs/recipes.md, --help and the table list the same settings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "ablate/ablation_spec.hpp"
#include "cli/commands.hpp"
#include "cli/loader_arguments.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

const std::string kRecipe = std::string(FFCV_SOURCE_DIR) + "/recipes/fashion_mnist.toml";

// A valid value of `row` other than `defaults`' own, as text.
std::string other_value(const SettingRow& row) {
  if (std::holds_alternative<bool*>(row.slot)) return *std::get<bool*>(row.slot) ? "false" : "true";
  if (std::holds_alternative<std::string*>(row.slot)) {
    for (std::string_view choice : row.rule.choices) {
      if (choice != *std::get<std::string*>(row.slot)) return std::string(choice);
    }
    FAIL("a string setting without a second choice: " << row.name);
  }
  const double value = std::stod(setting_text(row.slot));
  double other = value + 1;
  if (!in_range(other, row.rule)) other = (row.rule.min + row.rule.max) / 2;
  REQUIRE(in_range(other, row.rule));
  REQUIRE(other != value);
  return std::holds_alternative<double*>(row.slot) ? format_number(other)
                                                   : std::to_string(static_cast<long long>(other));
}

// `base` with setting `index` set to `text`.
LoaderSettings with(LoaderSettings base, std::size_t index, const std::string& text) {
  set_setting(loader_setting_rows(base)[index], text);
  return base;
}

// The value as a TOML value: strings quoted, numbers and booleans as they are.
std::string toml_value(const SettingRow& row, const std::string& text) {
  return std::holds_alternative<std::string*>(row.slot) ? "\"" + text + "\"" : text;
}

LoaderSettings from_flags(const std::vector<std::string>& flags) {
  tools::Arguments args = tools::bench_arguments();
  std::vector<std::string> argv = {"file.beton"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  REQUIRE(args.parse(argv));
  return tools::loader_settings(args);
}

LoaderSettings from_ablation(const test::TempDir& dir, const std::string& bench_section) {
  const std::string spec = dir.file("spec.toml");
  std::ofstream(spec) << "[dataset]\nsource = \"beton\"\npath = \"data.beton\"\n[bench]\n"
                      << bench_section << "\n[sweep]\nbatch_size = [8]\n";
  const tools::AblationSpec loaded = tools::load_ablation_spec(spec);
  return from_flags(tools::setting_arguments(loaded.bench));
}

LoaderSettings from_recipe(const std::vector<std::string>& overrides) {
  return train::load_recipe(kRecipe, overrides).data;
}

// The setting names in docs/recipes.md's "Loader settings" table.
std::vector<std::string> documented_settings() {
  std::istringstream doc(test::text_of(std::string(FFCV_SOURCE_DIR) + "/docs/recipes.md"));
  std::vector<std::string> names;
  bool inside = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Loader settings";
    if (inside && line.rfind("| `", 0) == 0) {
      names.push_back(line.substr(3, line.find('`', 3) - 3));
    }
  }
  return names;
}

}  // namespace

TEST_CASE("the loader settings table: unique names, docs, defaults within their rules",
          "[settings]") {
  LoaderSettings defaults;
  std::set<std::string> names;
  for (const SettingRow& row : loader_setting_rows(defaults)) {
    INFO(row.name);
    CHECK(names.insert(std::string(row.name)).second);
    CHECK(!row.doc.empty());
    LoaderSettings copy;
    CHECK_NOTHROW(set_setting(loader_setting_rows(copy)[names.size() - 1], setting_text(row.slot)));
    CHECK(copy == defaults);
  }
  for (const SettingAlias& alias : loader_setting_aliases()) {
    CHECK(names.count(std::string(alias.name)) == 1);
    CHECK(names.count(std::string(alias.old_name)) == 0);
  }
}

TEST_CASE("a bad setting value is refused naming the setting and its rule", "[settings]") {
  LoaderSettings settings;
  const auto rows = loader_setting_rows(settings);
  const auto row = [&](std::string_view name) {
    return *std::find_if(rows.begin(), rows.end(),
                         [&](const SettingRow& r) { return r.name == name; });
  };
  CHECK_THROWS_WITH(set_setting(row("num_workers"), "-1"),
                    "num_workers must be in [0, 1024], got \"-1\"");
  CHECK_THROWS_WITH(set_setting(row("num_workers"), "two"),
                    "num_workers must be a whole number, got \"two\"");
  CHECK_THROWS_WITH(set_setting(row("order"), "shuffled"),
                    Catch::Contains("order must be one of sequential, random, quasi_random"));
  CHECK_THROWS_WITH(set_setting(row("drop_last"), "yes"), Catch::Contains("true or false"));
  CHECK_THROWS_WITH(set_setting(row("max_skipped_fraction"), "nan"), Catch::Contains("a number"));
  CHECK_THROWS_WITH(set_setting(row("seed"), "-3"), Catch::Contains(">= 0"));
  CHECK(settings == LoaderSettings{});  // nothing was set by a refused value
}

TEST_CASE("loader_options is the one translation: URLs, 0 workers, ranks", "[settings]") {
  LoaderSettings settings;
  settings.order = "quasi_random";
  settings.cache_budget_mib = 64;
  LoaderPlace place;
  place.location = "data/train.beton";
  place.batch_size = 32;
  place.cores = 3;
  LoaderOptions options = loader_options(settings, place);
  CHECK(options.os_cache);
  CHECK(options.num_workers == 3);
  CHECK(options.order.kind == OrderKind::kQuasiRandom);
  CHECK(options.order.window_pages == 0);
  CHECK(options.cache.budget_bytes == 64u << 20);
  CHECK(options.batch_size == 32);
  CHECK_FALSE(options.default_pipelines);

  place.location = "HTTPS://example.org/train.beton";
  CHECK_FALSE(loader_options(settings, place).os_cache);  // a URL cannot be mapped
  settings.num_workers = 5;
  CHECK(loader_options(settings, place).num_workers == 5);
  CHECK(resolve_workers(0, 0) >= 1);
  // HTTP limits: 0 leaves them to the environment and the defaults.
  CHECK_FALSE(loader_options(settings, place).cache.http.max_attempts.has_value());
  settings.http_attempts = 2;
  settings.http_stall_timeout_s = 0.5;
  options = loader_options(settings, place);
  CHECK(options.cache.http.max_attempts == 2);
  CHECK(options.cache.http.stall_timeout_seconds == 0.5);
  CHECK_FALSE(options.cache.http.connect_timeout_seconds.has_value());
  place.rank = 2;
  place.world_size = 2;
  CHECK_THROWS_AS(loader_options(settings, place), ConfigError);
}

TEST_CASE("every loader setting reaches recipes, flags and ablations from its one row",
          "[settings]") {
  test::TempDir dir;
  const LoaderSettings recipe_base = from_recipe({});
  LoaderSettings defaults;
  const auto rows = loader_setting_rows(defaults);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SettingRow& row = rows[i];
    const std::string value = other_value(row);
    INFO(row.name << " = " << value);
    CHECK(from_recipe({"data." + std::string(row.name) + "=" + value}) ==
          with(recipe_base, i, value));
    CHECK(from_flags({"--" + tools::setting_flag(row.name), value}) ==
          with(LoaderSettings{}, i, value));
    CHECK(from_ablation(dir, std::string(row.name) + " = " + toml_value(row, value)) ==
          with(LoaderSettings{}, i, value));
  }
}

TEST_CASE("the old spellings of loader settings still work", "[settings]") {
  test::TempDir dir;
  LoaderSettings expected;
  expected.num_workers = 3;
  expected.drop_last = false;
  expected.os_cache = false;
  expected.cache_budget_mib = 512;
  expected.cache_readers = 7;
  expected.storage_latency_ms = 2;
  expected.storage_bandwidth_mbs = 50;
  CHECK(from_flags({"--workers", "3", "--keep-last", "--process-cache", "--cache-budget", "512M",
                    "--readers", "7", "--latency-ms", "2", "--bandwidth-mbs", "50"}) == expected);
  CHECK(from_ablation(dir,
                      "workers = 3\nkeep_last = true\nprocess_cache = true\n"
                      "cache_budget = \"512M\"\nreaders = 7\nlatency_ms = 2\nbandwidth_mbs = 50") ==
        expected);
  CHECK(from_recipe({"data.workers=3"}).num_workers == 3);
  tools::Arguments args = tools::bench_arguments();
  CHECK_THROWS_WITH(args.parse({"file.beton", "--cache-budget", "1000K"}),
                    Catch::Contains("--cache-budget") && Catch::Contains("whole number of MiB"));
  // The recipe written back spells the new name only.
  const std::string toml = train::recipe_to_toml(train::load_recipe(kRecipe, {"data.workers=3"}));
  CHECK_THAT(toml, Catch::Contains("num_workers = 3") && !Catch::Contains("\nworkers"));
}

TEST_CASE("an old flag prints its new name once", "[settings][cli]") {
  std::string errors;
  test::run_cli("bench --workers 1 --workers 2 --keep-last /nonexistent.beton", errors);
  CHECK_THAT(errors, Catch::Contains("note: --workers is now spelled --num-workers") &&
                         Catch::Contains("note: --keep-last is now spelled --drop-last"));
  CHECK(errors.find("--workers is now") == errors.rfind("--workers is now"));
}

TEST_CASE("docs/recipes.md, --help and the table list the same loader settings",
          "[settings][docs]") {
  const std::vector<std::string> names = loader_setting_names();
  CHECK(documented_settings() == names);
  for (const char* command : {"bench", "doctor"}) {
    std::string help;
    REQUIRE(test::run_cli(std::string(command) + " --help", help) == 0);
    for (const std::string& name : names) {
      INFO(command << " --help, " << name);
      CHECK_THAT(help, Catch::Contains("--" + tools::setting_flag(name) + " "));
    }
  }
  const std::vector<std::string> keys = train::recipe_keys();
  for (const std::string& name : names) {
    CHECK(std::count(keys.begin(), keys.end(), "data." + name) == 1);
    CHECK(std::count(tools::kBenchKeys.begin(), tools::kBenchKeys.end(), name) == 1);
  }
}
