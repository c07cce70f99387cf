// Stopping `ffcv run` and following what it says: the command it prints after a stop resumes the
// same run (its --set overrides included) to the weights of a run never stopped, a resume with
// another recipe is refused naming the keys, SIGTERM exits 143, and the advice for a learning-rate
// peak past a short run's end trains when followed.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/train/trainer.hpp"
#include "ffcv/util/errors.hpp"
#include "tiny_dataset.hpp"

using namespace ffcv;
using namespace ffcv::train;
namespace fs = std::filesystem;

namespace {

std::string summary_value(const std::string& run_dir, const std::string& name) {
  const std::string summary = test::text_of(run_dir + "/summary.json");
  const std::string needle = "\"" + name + "\": ";
  const std::size_t at = summary.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + needle.size();
  return summary.substr(begin, summary.find_first_of(",}\n", begin) - begin);
}

// The text after `marker` on the line of `output` that holds it, or "".
std::string rest_of_line(const std::string& output, const std::string& marker) {
  const std::size_t at = output.find(marker);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + marker.size();
  return output.substr(begin, output.find('\n', begin) - begin);
}

}  // namespace

TEST_CASE("a stopped run prints the command that resumes it, overrides and all",
          "[trainer][cli][resume]") {
  test::TempDir dir;
  const Recipe recipe = test::tiny_recipe(dir);  // 2 epochs over train.beton
  write_text_file(dir.file("tiny.toml"), recipe_to_toml(recipe));
  test::write_tiny_dataset(dir.file("other-train.beton"), 64, 5);
  // The command line changes the data file and the schedule.
  const std::string overrides =
      " --set training.epochs=3 --set data.train=" + dir.file("other-train.beton");
  std::string output;
  REQUIRE(test::run_cli("run " + dir.file("tiny.toml") + overrides + " --quiet --output-dir " +
                            dir.file("straight"),
                        output) == 0);

  // Stopped in its second epoch: it says how to go on.
  REQUIRE(test::run_cli("run " + dir.file("tiny.toml") + overrides +
                            " --stop-after-steps 11 --output-dir " + dir.file("stopped"),
                        output) == 0);
  INFO(output);
  const std::string resume = rest_of_line(output, "stopped; resume with: ffcv ");
  REQUIRE_FALSE(resume.empty());
  CHECK_THAT(resume, Catch::Contains(dir.file("stopped") + "/recipe.toml"));

  // A resume with the recipe file alone (neither override) is refused, naming what differs.
  const std::string other_recipe = "run " + dir.file("tiny.toml") +
                                   " --set checkpoint.resume=" + dir.file("stopped/checkpoint.pt") +
                                   " --output-dir " + dir.file("elsewhere");
  CHECK(test::run_cli(other_recipe, output) == 1);
  CHECK_THAT(output, Catch::Contains("training.epochs was 3 and is now 2") &&
                         Catch::Contains("data.train was") &&
                         Catch::Contains("resume with the recipe it saved: ffcv run " +
                                         dir.file("stopped") + "/recipe.toml"));
  CHECK_FALSE(fs::exists(dir.file("elsewhere")));
  CHECK(summary_value(dir.file("stopped"), "finished") == "false");  // its folder untouched

  // The printed command, as printed: the same run, to the weights of the run never stopped.
  REQUIRE(test::run_cli(resume, output) == 0);
  CHECK(summary_value(dir.file("stopped"), "finished") == "true");
  CHECK(summary_value(dir.file("stopped"), "epochs_done") == "3");
  CHECK(summary_value(dir.file("stopped"), "steps") ==
        summary_value(dir.file("straight"), "steps"));
  CHECK(summary_value(dir.file("stopped"), "weights_digest") ==
        summary_value(dir.file("straight"), "weights_digest"));
}

TEST_CASE("SIGTERM stops a run with a checkpoint and exit status 143", "[trainer][cli][resume]") {
  test::TempDir dir;
  const Recipe recipe = test::tiny_recipe(dir);
  write_text_file(dir.file("tiny.toml"), recipe_to_toml(recipe));
  const std::string run = dir.file("long");
  const std::string log = dir.file("long.log");
  // Far more epochs than it trains before the signal comes.
  const pid_t pid = test::start_cli(
      "run " + dir.file("tiny.toml") + " --set training.epochs=1000 --output-dir " + run, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (test::text_of(run + "/log.jsonl").find("\"event\": \"epoch\"") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(::kill(pid, SIGTERM) == 0);
  const int status = test::wait_for_exit(pid);
  INFO(test::text_of(log));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 143);
  CHECK(fs::exists(run + "/checkpoint.pt"));
  CHECK_THAT(test::text_of(log), Catch::Contains("stopped; resume with: ffcv run " + run +
                                                 "/recipe.toml --output-dir " + run));
}

TEST_CASE("the advice for a learning-rate peak past a short run's end trains when followed",
          "[trainer][cli][resume]") {
  test::TempDir dir;
  // Two brightness classes, 384 samples in batches of 16: one epoch of 24 steps separates them
  // at a useful learning rate, and does not at 1e-4 of it.
  Recipe recipe = test::tiny_recipe(dir);
  test::write_tiny_dataset(dir.file("train.beton"), 384, 0);
  test::write_tiny_dataset(dir.file("val.beton"), 96, 1);
  recipe.training.batch_size = 16;
  recipe.resolution = {24, 24, 0, 1, 8};
  recipe.lr.peak_epoch = 2;
  write_text_file(dir.file("tiny.toml"), recipe_to_toml(recipe));

  std::string advice;
  try {
    load_recipe(dir.file("tiny.toml"), {"training.epochs=1"});
    FAIL("a peak after the last epoch loaded");
  } catch (const ConfigError& error) {
    advice = rest_of_line(error.what(), "--set ");
  }
  INFO(advice);
  const std::string override_text = advice.substr(0, advice.find(' '));
  REQUIRE(override_text.rfind("lr.peak_epoch=", 0) == 0);

  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("advised");
  const RunSummary summary = run_training(
      load_recipe(dir.file("tiny.toml"), {"training.epochs=1", override_text}), options);
  CHECK(summary.finished);
  CHECK(summary.val_top1 > 0.9);
}
