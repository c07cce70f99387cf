// `ffcv run` with its data on another machine (data.train / data.val as http:// URLs, served by
// nginx on loopback) and on storage the recipe makes slow (data.storage_latency_ms): the run
// trains on the same bytes, so it ends with the weights of the run over the local files.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_log.hpp"
#include "http_test_server.hpp"
#include "tiny_dataset.hpp"

using namespace ffcv;

namespace {

std::string digest_of(const std::string& run_dir) {
  const std::string summary = test::text_of(run_dir + "/summary.json");
  const std::string needle = "\"weights_digest\": \"";
  const std::size_t at = summary.find(needle);
  return at == std::string::npos ? "" : summary.substr(at + needle.size(), 16);
}

// The sum of every epoch record's `name` in a run's log.
double epoch_sum(const std::string& run_dir, const std::string& name) {
  std::ifstream log(run_dir + "/log.jsonl");
  double total = 0;
  const std::string needle = "\"" + name + "\": ";
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\": \"epoch\"") == std::string::npos) continue;
    const std::size_t at = line.find(needle);
    if (at != std::string::npos) total += std::stod(line.substr(at + needle.size()));
  }
  return total;
}

// Trains `recipe` with `overrides` through the CLI into `out`; returns its weights' digest.
std::string train_cli(const test::TempDir& dir, const train::Recipe& recipe, const std::string& out,
                      const std::string& overrides = "") {
  const std::string path =
      dir.file("recipe-" + std::filesystem::path(out).filename().string() + ".toml");
  train::write_text_file(path, train::recipe_to_toml(recipe));
  std::string output;
  INFO(output);
  REQUIRE(test::run_cli("run " + path + " --quiet --output-dir " + out + overrides, output) == 0);
  return digest_of(out);
}

}  // namespace

TEST_CASE("ffcv run trains over HTTP and over slow storage to the local run's weights",
          "[trainer][cli][http]") {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  test::TempDir dir;
  train::Recipe recipe = test::tiny_recipe(dir);
  const std::string local = train_cli(dir, recipe, dir.file("local"));
  REQUIRE(local.size() == 16);

  // The same files served by nginx: the process cache reads their pages by range requests.
  const auto server = test::TestHttpServer::nginx(dir.path());
  recipe.data.train = server->url("train.beton");
  recipe.data.val = server->url("val.beton");
  CHECK(train_cli(dir, recipe, dir.file("remote")) == local);
  CHECK_THAT(test::text_of(dir.file("remote") + "/recipe.toml"),
             Catch::Contains("train = \"http://127.0.0.1:"));
  std::size_t ranged = 0;
  for (const std::string& line : server->access_log()) ranged += line.rfind("206 ", 0) == 0;
  CHECK(ranged > 0);

  // Local files through the process cache, every read 300 ms late: the same weights, and each
  // epoch at least as long as the reads it waited for (one page per epoch at the least).
  recipe.data.train = dir.file("train.beton");
  recipe.data.val = dir.file("val.beton");
  recipe.data.os_cache = false;
  recipe.data.storage_latency_ms = 300;
  recipe.data.storage_bandwidth_mbs = 50;
  CHECK(train_cli(dir, recipe, dir.file("slow")) == local);
  // (A bound, not a comparison with the local run's time, which a loaded machine can stretch.)
  CHECK(epoch_sum(dir.file("slow"), "epoch_seconds") >= 2 * 0.3);
}
