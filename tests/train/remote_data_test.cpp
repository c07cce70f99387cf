// `ffcv run` with its data on another machine (data.train / data.val as http:// URLs, served by
// nginx on loopback) and on storage the recipe makes slow (data.storage_latency_ms): the run
// trains on the same bytes, so it ends with the weights of the run over the local files.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_log.hpp"
#include "http_test_server.hpp"
#include "process_scan.hpp"
#include "run_digest.hpp"
#include "tiny_dataset.hpp"

using namespace ffcv;

namespace {

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
  const int status =
      test::run_cli("run " + path + " --quiet --output-dir " + out + overrides, output);
  INFO(output);
  REQUIRE(status == 0);
  return test::weights_digest_of(out);
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
  for (const std::string& line : server->settled_access_log()) ranged += line.rfind("206 ", 0) == 0;
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

namespace {

// Trains `recipe` (its data.train: `dir`/train.beton, served by the fault server) once through a
// correct server, to count the run's requests, then again into `out` with the file replaced on
// the server before the last request, a page read of the last epoch. Returns the failed run's
// output; its status must be 1.
std::string run_failing_last_read(const test::TempDir& dir, train::Recipe recipe,
                                  const std::string& out) {
  const std::string recipe_path = dir.file("recipe.toml");
  const std::string file = dir.file("train.beton");
  const auto served_requests = [&] {
    // The fault server logs "REQUEST START END" per range it served.
    std::uint64_t last = 0;
    std::ifstream log(file + ".log");
    for (std::uint64_t n, start, end; log >> n >> start >> end;) last = std::max(last, n);
    return last;
  };
  std::filesystem::remove(file + ".log");
  std::uint64_t requests = 0;
  {
    const auto server = test::TestHttpServer::faulty(file, "correct");
    recipe.data.train = server->url("train.beton");
    train::write_text_file(recipe_path, train::recipe_to_toml(recipe));
    std::string output;
    const int status =
        test::run_cli("run " + recipe_path + " --quiet --output-dir " + out + "-whole", output);
    INFO(output);
    REQUIRE(status == 0);
    requests = served_requests();
  }
  REQUIRE(requests > 2);
  const auto server =
      test::TestHttpServer::faulty(file, "changed-after-" + std::to_string(requests - 1));
  recipe.data.train = server->url("train.beton");
  train::write_text_file(recipe_path, train::recipe_to_toml(recipe));
  std::string output;
  CHECK(test::run_cli("run " + recipe_path + " --output-dir " + out, output) == 1);
  return output;
}

// The records of `event` in `run_dir`/log.jsonl.
std::vector<std::string> log_records(const std::string& run_dir, const std::string& event) {
  std::ifstream log(run_dir + "/log.jsonl");
  std::vector<std::string> records;
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\": \"" + event + "\"") != std::string::npos) records.push_back(line);
  }
  return records;
}

}  // namespace

TEST_CASE(
    "a storage error in training is logged in log.jsonl and named in the progress line's "
    "numbering",
    "[trainer][cli][http]") {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  test::TempDir dir;
  train::Recipe recipe = test::tiny_recipe(dir);  // 2 epochs of 8 batches; validation stays local
  {
    // The last epoch fails: epoch 2 of 2 on the progress line.
    const std::string output = run_failing_last_read(dir, recipe, dir.file("failed"));
    INFO(output);
    CHECK_THAT(output, Catch::Contains("epoch 2/2"));
    CHECK_THAT(output, Catch::Contains("error: epoch 2/2, batch ") &&
                           Catch::Contains("changed on the server"));
    CHECK_THAT(output, !Catch::Contains("epoch 1, batch"));  // the loader's index, from 0
    // log.jsonl: the first epoch's record, then one "failed" record in the log's own numbering
    // (from 0, as the epoch records count), with the error line as printed.
    const std::vector<std::string> epochs = log_records(dir.file("failed"), "epoch");
    const std::vector<std::string> failures = log_records(dir.file("failed"), "failed");
    REQUIRE(epochs.size() == 1);
    CHECK_THAT(epochs[0], Catch::Contains("\"epoch\": 0,"));
    REQUIRE(failures.size() == 1);
    CHECK_THAT(failures[0], Catch::Contains("\"epoch\": 1,") &&
                                Catch::Contains("\"error\": \"epoch 2/2, batch ") &&
                                Catch::Contains("changed on the server"));
  }
  {
    // A run of one epoch fails in it, before any checkpoint: its folder stays, with the record.
    recipe.training.epochs = 1;
    const std::string output = run_failing_last_read(dir, recipe, dir.file("first"));
    INFO(output);
    CHECK_THAT(output, Catch::Contains("error: epoch 1/1, batch "));
    CHECK_FALSE(std::filesystem::exists(dir.file("first/checkpoint.pt")));
    CHECK(log_records(dir.file("first"), "epoch").empty());
    const std::vector<std::string> failures = log_records(dir.file("first"), "failed");
    REQUIRE(failures.size() == 1);
    CHECK_THAT(failures[0], Catch::Contains("\"epoch\": 0,") &&
                                Catch::Contains("\"error\": \"epoch 1/1, batch "));
  }
}

TEST_CASE("a password in a data URL logs in but is kept out of every output and the run folder",
          "[trainer][cli][http]") {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  test::TempDir dir;
  const train::Recipe recipe = test::tiny_recipe(dir);
  const std::string recipe_path = dir.file("recipe.toml");
  train::write_text_file(recipe_path, train::recipe_to_toml(recipe));
  const auto server =
      test::TestHttpServer::faulty(dir.file("train.beton"), "basic-auth-alice:s3cret-pw");
  const std::string url = server->url("train.beton");
  const std::string host_and_path = url.substr(std::string("http://").size());
  const std::string secret_url = "http://alice:s3cret-pw@" + host_and_path;
  std::ofstream(dir.file("empty-netrc")) << "";
  std::ofstream(dir.file("netrc")) << "machine 127.0.0.1 login alice password s3cret-pw\n";
  const std::string no_netrc = "NETRC=" + dir.file("empty-netrc") + " ";

  // The password given on the command line: used, and written nowhere.
  const std::string first = dir.file("first");
  std::string output;
  REQUIRE(test::run_cli(
              "run " + recipe_path + " --output-dir " + first + " --set data.train=" + secret_url,
              output, no_netrc) == 0);
  CHECK_THAT(output, !Catch::Contains("s3cret"));
  std::size_t files = 0;
  for (const auto& folder : {first, dir.file("runs")}) {
    if (!std::filesystem::exists(folder)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      INFO(entry.path());
      CHECK(test::text_of(entry.path().string()).find("s3cret") == std::string::npos);
    }
  }
  CHECK(std::filesystem::exists(first + "/checkpoint.pt"));
  CHECK(files >= 4);  // recipe.toml, checkpoint.pt, log.jsonl, summary.json at the least
  CHECK_THAT(test::text_of(first + "/recipe.toml"),
             Catch::Contains("train = \"http://alice@" + host_and_path + "\""));

  // The run folder's recipe again: the password now comes from netrc, and the weights are the
  // same; without it the server's refusal says where to give it.
  CHECK(test::run_cli("run " + first + "/recipe.toml --quiet --output-dir " + dir.file("again"),
                      output, "NETRC=" + dir.file("netrc") + " ") == 0);
  CHECK(test::weights_digest_of(dir.file("again")) == test::weights_digest_of(first));
  CHECK(test::weights_digest_of(first).size() == 16);
  CHECK(test::run_cli("run " + first + "/recipe.toml --quiet --output-dir " + dir.file("refused"),
                      output, no_netrc) != 0);
  CHECK_THAT(output, Catch::Contains("HTTP 401") && Catch::Contains("netrc") &&
                         Catch::Contains("http://alice@" + host_and_path));

  // A grid of processes: its tables (which quote the command line), folder record and points.
  const std::string grid = dir.file("grid");
  REQUIRE(test::run_cli("run " + recipe_path + " --grid lr.lr=0.1,0.2 --placement processes" +
                            " --output-dir " + grid + " --set data.train=" + secret_url,
                        output, no_netrc) == 0);
  CHECK_THAT(output, !Catch::Contains("s3cret"));
  std::size_t grid_files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(grid)) {
    if (!entry.is_regular_file()) continue;
    ++grid_files;
    INFO(entry.path());
    CHECK(test::text_of(entry.path().string()).find("s3cret") == std::string::npos);
  }
  CHECK(grid_files >= 8);
  CHECK_THAT(test::text_of(grid + "/grid.md"), Catch::Contains("http://alice@" + host_and_path));
}

namespace {

// `ffcv ARGUMENTS` run to its end (its output into `log`) while the command lines of the
// processes it starts are watched: how many sightings of a child named `visible`, and how many
// of a process whose command line held `secret` (the command's own process, whose command line
// the user typed, is not counted; `secret` is the URL's form of the password with this test's own
// server after it, which the server, given the login to expect, does not hold, and no other test
// running meanwhile names).
struct WatchedRun {
  int status = -1;
  std::size_t seen = 0;
  std::size_t leaked = 0;
  std::string leaked_command;  // the first such command line, for the failure's message
};

WatchedRun run_watching_children(const std::string& arguments, const std::string& log,
                                 const std::string& secret, const std::string& visible) {
  WatchedRun run;
  const pid_t pid = test::start_cli(arguments, log);
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return run;
    }
    for (const pid_t child : test::processes_naming(visible)) run.seen += child != pid;
    // A child between fork and exec still shows its parent's command line, which the user
    // typed: only a command line of the child's own counts.
    const std::string parent = test::command_line_of("/proc/" + std::to_string(pid) + "/cmdline");
    for (const pid_t child : test::processes_naming(secret)) {
      const std::string command =
          test::command_line_of("/proc/" + std::to_string(child) + "/cmdline");
      if (child == pid || command.empty() || command == parent) continue;
      ++run.leaked;
      if (run.leaked_command.empty()) {
        run.leaked_command = std::to_string(child) + ": " + command;
        std::replace(run.leaked_command.begin(), run.leaked_command.end(), '\0', ' ');
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Every regular file under `folder` that holds `text`.
std::vector<std::string> files_holding(const std::string& folder, const std::string& text) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    if (test::text_of(entry.path().string()).find(text) != std::string::npos) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

}  // namespace

TEST_CASE("a password in a swept data URL reaches the children outside their command lines",
          "[trainer][cli][http][grid][ablate]") {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  test::TempDir dir;
  const train::Recipe recipe = test::tiny_recipe(dir);
  const std::string recipe_path = dir.file("recipe.toml");
  train::write_text_file(recipe_path, train::recipe_to_toml(recipe));
  const auto server =
      test::TestHttpServer::faulty(dir.file("train.beton"), "basic-auth-alice:s3cret-pw");
  const std::string url = server->url("train.beton");
  const std::string host_and_path = url.substr(std::string("http://").size());
  const std::string secret_url = "http://alice:s3cret-pw@" + host_and_path;
  const std::string shown_url = "http://alice@" + host_and_path;
  std::ofstream(dir.file("empty-netrc")) << "";
  ::setenv("NETRC", dir.file("empty-netrc").c_str(), 1);  // the watched commands' netrc

  // A grid that sweeps data.train over the URL and the local file, one process per point: the
  // points log in (both finish), no point's command line holds the password, and no file of the
  // grid does (points.tsv lists the points' values).
  const std::string grid = dir.file("grid");
  const WatchedRun grid_run = run_watching_children(
      "run " + recipe_path + " --grid data.train=" + secret_url + "," + dir.file("train.beton") +
          " --placement sequential --output-dir " + grid,
      dir.file("grid.log"), "s3cret-pw@" + host_and_path, "alice@" + host_and_path);
  INFO(test::text_of(dir.file("grid.log")));
  CHECK(grid_run.status == 0);
  CHECK(grid_run.seen > 0);
  INFO(grid_run.leaked_command);
  CHECK(grid_run.leaked == 0);
  CHECK(files_holding(grid, "s3cret").empty());
  CHECK_THAT(test::text_of(grid + "/points.tsv"), Catch::Contains("data.train=" + shown_url));
  CHECK_THAT(test::text_of(dir.file("grid.log")),
             Catch::Contains("2 of 2 points finished") && !Catch::Contains("s3cret"));

  // An ablation over the URL: each cell's `ffcv bench` logs in, with no password on its command
  // line; the cells, the tables and the folder's record leave it out. Slow reads keep each cell
  // running long enough to be seen.
  const std::string spec = dir.file("remote.toml");
  std::ofstream(spec) << "[dataset]\nsource = \"beton\"\npath = \"" << secret_url
                      << "\"\n[bench]\nbatch_size = 8\nepochs = 2\nstorage_latency_ms = 100\n"
                      << "image_decoder = \"random_resized_crop\"\nimage_size = 16\n"
                      << "[sweep]\nnum_workers = [1, 2]\n";
  const std::string out = dir.file("ablation");
  const WatchedRun ablation =
      run_watching_children("ablate " + spec + " --output " + out, dir.file("ablate.log"),
                            "s3cret-pw@" + host_and_path, "alice@" + host_and_path);
  INFO(test::text_of(dir.file("ablate.log")));
  CHECK(ablation.status == 0);
  CHECK(ablation.seen > 0);
  INFO(ablation.leaked_command);
  CHECK(ablation.leaked == 0);
  CHECK(files_holding(out, "s3cret").empty());
  CHECK_THAT(test::text_of(dir.file("ablate.log")), !Catch::Contains("s3cret"));
  CHECK_THAT(test::text_of(out + "/made_from.tsv"), Catch::Contains(shown_url));
  ::unsetenv("NETRC");
}
