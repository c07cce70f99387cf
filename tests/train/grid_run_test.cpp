// `ffcv run` with a grid, in every placement, on a small Fashion-MNIST subset: each point ends
// with the weights (bit for bit) of training it alone with the same seed and thread count; the
// table lists every point; a failing point does not stop the others; an interrupted grid resumes
// where it stopped and a finished one is not trained again; `processes` pins each point to its
// own cores; one point runs alone as a cluster's job array runs it.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/json_text.hpp"
#include "process_scan.hpp"
#include "run_digest.hpp"
#include "tiny_dataset.hpp"

using namespace ffcv;
namespace fs = std::filesystem;

namespace {

const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// The string value of `"name": "..."` in a flat JSON record.
std::string json_string(const std::string& json, const std::string& name) {
  const std::string needle = "\"" + name + "\": \"";
  const std::size_t at = json.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + needle.size();
  return json.substr(begin, json.find('"', begin) - begin);
}

// A 4-point grid over a 256 + 128 sample Fashion-MNIST subset: 2 epochs of 8 steps of a
// ResNet-18 of width 1/8, one intra-op thread. Returns the recipe's path; the grid is in
// `grid.toml` beside it.
struct FashionGrid {
  test::TempDir dir;
  std::string base, grid;
  std::vector<std::vector<std::string>> points = {{"lr.lr=0.05", "training.label_smoothing=0.0"},
                                                  {"lr.lr=0.05", "training.label_smoothing=0.1"},
                                                  {"lr.lr=0.2", "training.label_smoothing=0.0"},
                                                  {"lr.lr=0.2", "training.label_smoothing=0.1"}};

  FashionGrid() {
    REQUIRE(fs::exists(kFashionMnistDir));  // tools/setup.sh installs dataset-fashion-mnist
    std::string output;
    for (const auto& [split, count] : {std::pair{"train", 256}, std::pair{"test", 128}}) {
      INFO(output);
      REQUIRE(test::run_cli(std::string("write fashion-mnist --split ") + split + " --subset " +
                                std::to_string(count) + " --write-mode raw --quiet --output " +
                                dir.file(std::string(split) + ".beton"),
                            output) == 0);
    }
    train::Recipe recipe =
        test::small_model_recipe(dir, dir.file("train.beton"), dir.file("test.beton"));
    recipe.data.mean = {72.94, 72.94, 72.94};
    recipe.data.std = {90.02, 90.02, 90.02};
    recipe.model.num_classes = 10;
    recipe.lr.lr = 0.5;
    recipe.training.batch_size = 32;
    recipe.validation.batch_size = 64;
    base = dir.file("base.toml");
    grid = dir.file("grid.toml");
    train::write_text_file(base, train::recipe_to_toml(recipe));
    train::write_text_file(grid, train::recipe_to_toml(recipe) +
                                     "\n[grid]\nlr.lr = [0.05, 0.2]\n"
                                     "training.label_smoothing = [0.0, 0.1]\n");
  }

  // The digest of each point trained alone, without a grid.
  std::vector<std::string> alone() {
    std::vector<std::string> digests;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const std::string out = dir.file("alone-" + std::to_string(i));
      std::string output;
      INFO(output);
      REQUIRE(test::run_cli("run " + base + " --quiet --output-dir " + out + " --set " +
                                points[i][0] + " --set " + points[i][1],
                            output) == 0);
      digests.push_back(test::weights_digest_of(out));
      REQUIRE(digests.back().size() == 16);
    }
    return digests;
  }
};

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("every grid placement trains each point to the weights of that point alone",
          "[trainer][cli][grid]") {
  FashionGrid fixture;
  const std::vector<std::string> alone = fixture.alone();
  // Different points really differ, so equal digests are not an accident.
  CHECK(std::set<std::string>(alone.begin(), alone.end()).size() == 4);
  for (const std::string placement : {"sequential", "processes", "threads", "shared"}) {
    SECTION(placement) {
      const std::string out = fixture.dir.file("grid-" + placement);
      std::string output;
      INFO(output);
      REQUIRE(test::run_cli(
                  "run " + fixture.grid + " --placement " + placement + " --output-dir " + out,
                  output) == 0);
      CHECK_THAT(output, Catch::Contains("4 of 4 points finished"));
      for (std::size_t i = 0; i < 4; ++i) {
        const std::string point = out + "/point-00" + std::to_string(i);
        INFO("point " << i << ": " << test::text_of(point + "/recipe.toml"));
        CHECK(test::weights_digest_of(point) == alone[i]);
      }
      // The table: a header and one finished row per point, with the swept values.
      const std::vector<std::string> rows = lines_of(out + "/grid.csv");
      REQUIRE(rows.size() == 5);
      CHECK(rows[0].rfind("point,lr.lr,training.label_smoothing,state,val_top1", 0) == 0);
      CHECK(rows[4].rfind("3,0.2,0.1,finished,", 0) == 0);
      CHECK_THAT(test::text_of(out + "/grid.md"), Catch::Contains("# Grid: 4 points, 4 finished"));
      CHECK_THAT(test::text_of(out + "/grid.json"), Catch::Contains("\"state\": \"finished\""));
      if (std::string(placement) == "shared") {
        CHECK_THAT(output, Catch::Contains("shared in this process"));
      }
      if (std::string(placement) == "processes" && available_cores() >= 2) {
        // Each point ran pinned to its own share of this process's cores.
        const int share = available_cores() / 2;  // 4 points, min(points, cores) at once
        std::set<std::string> seen;
        for (std::size_t i = 0; i < 4; ++i) {
          const std::string cpus = json_string(
              test::text_of(out + "/point-00" + std::to_string(i) + "/log.jsonl"), "cpus");
          seen.insert(cpus);
          CHECK(cpus != cpu_list_text(affinity_cpus()));
          CHECK(static_cast<int>(std::count(cpus.begin(), cpus.end(), ',')) + 1 <= share);
        }
        CHECK(seen.size() >= 2);
      }
    }
  }
}

TEST_CASE("a failing grid point is tabled and the others finish, in and out of process",
          "[trainer][cli][grid]") {
  FashionGrid fixture;
  for (const std::string placement : {"sequential", "shared"}) {
    SECTION(placement) {
      const std::string out = fixture.dir.file("failing-" + placement);
      std::string output;
      INFO(output);
      // data.order=shuffled is refused by the recipe; lr.lr=1e30 diverges in the first epoch.
      CHECK(test::run_cli("run " + fixture.base + " --grid data.order=random,shuffled --grid " +
                              "lr.lr=0.1,1e30 --placement " + placement + " --output-dir " + out,
                          output) == 1);
      CHECK_THAT(output, Catch::Contains("1 of 4 points finished"));
      const std::vector<std::string> rows = lines_of(out + "/grid.csv");
      REQUIRE(rows.size() == 5);
      CHECK(rows[1].rfind("0,random,0.1,finished,", 0) == 0);
      CHECK(rows[2].rfind("1,random,1e30,failed,", 0) == 0);
      CHECK_THAT(rows[2], Catch::Contains("training diverged"));
      CHECK(rows[3].rfind("2,shuffled,0.1,failed,", 0) == 0);
      CHECK_THAT(rows[3], Catch::Contains("shuffled"));
      CHECK(rows[4].rfind("3,shuffled,1e30,failed,", 0) == 0);
      CHECK(fs::exists(out + "/point-001/error.txt"));
      // Again: the finished point waits, the failed ones start again from nothing (one start
      // record in their logs, not one per attempt).
      CHECK(test::run_cli("run " + fixture.base + " --grid data.order=random,shuffled --grid " +
                              "lr.lr=0.1,1e30 --placement " + placement + " --output-dir " + out,
                          output) == 1);
      CHECK_THAT(output, Catch::Contains("1 of 4 points finished"));
      const std::string log = test::text_of(out + "/point-001/log.jsonl");
      std::size_t starts = 0;
      for (std::size_t at = log.find("\"start\""); at != std::string::npos;
           at = log.find("\"start\"", at + 1)) {
        ++starts;
      }
      CHECK(starts == 1);
    }
  }
}

namespace {

// Whether the file at `path` holds `text` now.
bool file_holds(const std::string& path, const std::string& text) {
  return test::text_of(path).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a grid stopped by SIGTERM keeps each point's training and resumes to the lone weights",
          "[trainer][cli][grid]") {
  FashionGrid fixture;
  // Ten epochs (80 steps) per point: long enough that the signal finds the points training.
  const std::string longer = " --set training.epochs=10";
  const std::vector<std::string> rates = {"0.05", "0.2"};
  std::vector<std::string> alone;
  for (const std::string& lr : rates) {
    const std::string out = fixture.dir.file("alone-" + lr);
    std::string output;
    INFO(output);
    REQUIRE(test::run_cli("run " + fixture.base + " --quiet" + longer + " --set lr.lr=" + lr +
                              " --output-dir " + out,
                          output) == 0);
    alone.push_back(test::weights_digest_of(out));
  }
  for (const std::string placement : {"processes", "threads"}) {
    INFO("placement " << placement);
    const std::string out = fixture.dir.file("grid-" + placement);
    const std::string command = "run " + fixture.base + longer + " --grid lr.lr=0.05,0.2" +
                                " --placement " + placement + " --output-dir " + out;
    const std::string first_log = fixture.dir.file("first-" + placement + ".log");
    const pid_t pid = test::start_cli(command, first_log);
    // The signal comes once a point has trained an epoch: the points are mid-run.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!file_holds(out + "/point-000/log.jsonl", "\"event\": \"epoch\"") &&
           !file_holds(out + "/point-001/log.jsonl", "\"event\": \"epoch\"") &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(::kill(pid, SIGTERM) == 0);
    const int status = test::wait_for_exit(pid);
    INFO(test::text_of(first_log));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 143);  // 128 + SIGTERM, as a shell reports it
    // Each point finished, or stopped with its checkpoint and says so.
    int stopped = 0;
    for (std::size_t i = 0; i < rates.size(); ++i) {
      const std::string point = out + "/point-00" + std::to_string(i);
      if (!file_holds(point + "/summary.json", "\"finished\": false")) continue;
      ++stopped;
      CHECK(fs::exists(point + "/checkpoint.pt"));
    }
    CHECK(stopped >= 1);
    // The same command again finishes them, each with the weights of its lone run.
    std::string output;
    INFO(output);
    REQUIRE(test::run_cli(command, output) == 0);
    CHECK_THAT(output, Catch::Contains("2 of 2 points finished"));
    for (std::size_t i = 0; i < rates.size(); ++i) {
      CHECK(test::weights_digest_of(out + "/point-00" + std::to_string(i)) == alone[i]);
    }
  }
}

TEST_CASE("an interrupted grid resumes where it stopped, and a finished one is not trained again",
          "[trainer][cli][grid]") {
  FashionGrid fixture;
  const std::vector<std::string> alone = fixture.alone();
  const std::string out = fixture.dir.file("grid");
  std::string output;
  INFO(output);
  // Every point stops after 5 of its 16 steps, with a checkpoint.
  REQUIRE(test::run_cli("run " + fixture.grid + " --placement shared --stop-after-steps 5" +
                            " --output-dir " + out,
                        output) == 0);
  CHECK_THAT(output, Catch::Contains("0 of 4 points finished"));
  CHECK(lines_of(out + "/grid.csv")[1].rfind("0,0.05,0.0,stopped,", 0) == 0);
  // The training time of each point's first session (5 steps, no whole epoch).
  std::vector<double> first_seconds;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string point = out + "/point-00" + std::to_string(i);
    REQUIRE(json_numbers(test::text_of(point + "/log.jsonl"), "epoch_seconds").empty());
    first_seconds.push_back(
        json_numbers(test::text_of(point + "/summary.json"), "train_seconds")[0]);
    CHECK(first_seconds.back() > 0);
  }
  // Point 3 alone, as a job array's task 3 would run it: it resumes from its checkpoint.
  REQUIRE(::setenv("SLURM_ARRAY_TASK_ID", "3", 1) == 0);
  const int task_status =
      test::run_cli("run " + fixture.grid + " --quiet --output-dir " + out, output);
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  REQUIRE(task_status == 0);
  CHECK(test::weights_digest_of(out + "/point-003") == alone[3]);
  CHECK_THAT(test::text_of(out + "/point-002/summary.json"),
             Catch::Contains("\"finished\": false"));
  // The rest of the grid, in threads this time: three points resume, the finished one waits.
  REQUIRE(test::run_cli("run " + fixture.grid + " --placement threads --output-dir " + out,
                        output) == 0);
  CHECK_THAT(output, Catch::Contains("1 already finished"));
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(test::weights_digest_of(out + "/point-00" + std::to_string(i)) == alone[i]);
  }
  // The table has each point's whole run: the first session's training time and the epochs
  // logged after the resume; the last epoch's loss as the lone run has it.
  const std::string table = test::text_of(out + "/grid.json");
  const std::vector<double> table_seconds = json_numbers(table, "train_seconds");
  const std::vector<double> table_loss = json_numbers(table, "train_loss");
  REQUIRE(table_seconds.size() == 4);
  REQUIRE(table_loss.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("point " << i);
    const std::string point = out + "/point-00" + std::to_string(i);
    double resumed_seconds = 0;
    for (const double seconds :
         json_numbers(test::text_of(point + "/log.jsonl"), "epoch_seconds")) {
      resumed_seconds += seconds;
    }
    CHECK(table_seconds[i] == Approx(first_seconds[i] + resumed_seconds).margin(0.006));
    const double lone_loss = json_numbers(
        test::text_of(fixture.dir.file("alone-" + std::to_string(i)) + "/summary.json"),
        "train_loss")[0];
    CHECK(table_loss[i] == Approx(lone_loss).margin(0.00006));
  }
  // Again: nothing left to train; the table is written from the folders alone.
  const auto summary_time = fs::last_write_time(out + "/point-000/summary.json");
  fs::remove(out + "/grid.md");
  REQUIRE(test::run_cli("run " + fixture.grid + " --output-dir " + out, output) == 0);
  CHECK_THAT(output, Catch::Contains("4 of 4 points already finished"));
  CHECK(fs::last_write_time(out + "/point-000/summary.json") == summary_time);
  CHECK(fs::exists(out + "/grid.md"));
  fs::remove(out + "/grid.csv");
  REQUIRE(test::run_cli("run " + fixture.grid + " --gather --output-dir " + out, output) == 0);
  CHECK(lines_of(out + "/grid.csv").size() == 5);

  // A folder of another grid is refused; so is a point that is not in the grid.
  CHECK(test::run_cli("run " + fixture.grid + " --grid lr.lr=1,2 --output-dir " + out, output) ==
        2);
  CHECK_THAT(output, Catch::Contains("holds the runs of another grid"));
  // Nor does a grid write into a folder of other files, or over a file.
  CHECK(test::run_cli("run " + fixture.grid + " --output-dir " + fixture.dir.path(), output) == 2);
  CHECK_THAT(output, Catch::Contains("holds other files and no grid"));
  CHECK(test::run_cli("run " + fixture.grid + " --output-dir " + fixture.base, output) == 2);
  CHECK_THAT(output, Catch::Contains("is a file"));
  CHECK(fs::file_size(fixture.base) > 0);
  CHECK(test::run_cli("run " + fixture.grid + " --point 4 --output-dir " + out, output) == 2);
  CHECK_THAT(output, Catch::Contains("it has 4 points, 0 to 3"));
  // cuDNN's flags are one per process: a grid in one process cannot sweep them.
  CHECK(test::run_cli("run " + fixture.base + " --grid training.deterministic=true,false" +
                          " --placement threads --output-dir " + fixture.dir.file("cudnn"),
                      output) == 2);
  CHECK_THAT(output, Catch::Contains("one setting for a whole process"));
  CHECK(test::run_cli("run " + fixture.base + " --placement shared", output) == 2);
  CHECK_THAT(output, Catch::Contains("--placement belongs to a grid"));
}

TEST_CASE("shared with share_seeds decodes once for points of different seeds, crops of their own",
          "[trainer][cli][grid]") {
  FashionGrid fixture;
  // The loader's `loader_shared_by` of each epoch of a point.
  const auto shared_by = [](const std::string& point) {
    std::vector<int> readers;
    std::ifstream log(point + "/log.jsonl");
    for (std::string line; std::getline(log, line);) {
      const std::size_t at = line.find("\"loader_shared_by\": ");
      if (at != std::string::npos) readers.push_back(std::stoi(line.substr(at + 20)));
    }
    return readers;
  };
  const std::string seeds = " --grid data.seed=0,1 --grid lr.lr=0.05,0.2 --placement shared";
  std::string output;
  INFO(output);
  // Without share_seeds: a group per seed.
  REQUIRE(test::run_cli(
              "run " + fixture.base + seeds + " --quiet --output-dir " + fixture.dir.file("apart"),
              output) == 0);
  CHECK(shared_by(fixture.dir.file("apart/point-000")) == std::vector<int>{2, 2});
  // With it: one group, one decode, a view per seed.
  std::ofstream(fixture.base, std::ios::app) << "\n[grid]\nshare_seeds = true\n";
  for (const std::string run : {"together", "again"}) {
    REQUIRE(test::run_cli(
                "run " + fixture.base + seeds + " --quiet --output-dir " + fixture.dir.file(run),
                output) == 0);
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(shared_by(fixture.dir.file(run + "/point-00" + std::to_string(i))) ==
            std::vector<int>{4, 4});
    }
  }
  const auto digest = [&](const std::string& run, int point) {
    return test::weights_digest_of(fixture.dir.file(run + "/point-00" + std::to_string(point)));
  };
  // The same seed and learning rate train alike; another seed trains on other crops.
  for (int point = 0; point < 4; ++point)
    CHECK(digest("together", point) == digest("again", point));
  CHECK(digest("together", 0) != digest("together", 2));  // seeds 0 and 1, lr 0.05
  CHECK(digest("together", 1) != digest("together", 3));
  // Even seed 0 differs from its own group: a view is flipped by the decoder's own draws.
  CHECK(digest("together", 0) != digest("apart", 0));
  // Views take no mixup: the group fails with the reason, in every point.
  CHECK(test::run_cli("run " + fixture.base + seeds + " --set augment.mixup_alpha=0.2" +
                          " --output-dir " + fixture.dir.file("mixup"),
                      output) == 1);
  CHECK_THAT(output, Catch::Contains("0 of 4 points finished"));
  CHECK_THAT(test::text_of(fixture.dir.file("mixup/point-003/error.txt")),
             Catch::Contains("grid.share_seeds") && Catch::Contains("no mixup"));
}

TEST_CASE("kill -9 of a grid leaves none of its points running", "[trainer][cli][grid]") {
  FashionGrid fixture;
  for (const std::string placement : {"sequential", "processes"}) {
    INFO("placement " << placement);
    const std::string out = fixture.dir.file("killed-" + placement);
    // Long enough (40 epochs a point) that the points are training when the grid is killed.
    const pid_t pid = test::start_cli("run " + fixture.grid + " --set training.epochs=40" +
                                          " --placement " + placement + " --output-dir " + out,
                                      fixture.dir.file("killed-" + placement + ".log"));
    // A point process names the grid's folder in its command line (--output-dir).
    REQUIRE(test::wait_until(
        [&] {
          for (const pid_t p : test::processes_naming(out)) {
            if (p != pid) return true;
          }
          return false;
        },
        std::chrono::seconds(60)));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    test::wait_for_exit(pid);
    INFO(test::text_of(fixture.dir.file("killed-" + placement + ".log")));
    CHECK(test::wait_until([&] { return test::processes_naming(out).empty(); },
                           std::chrono::seconds(5)));
  }
}

TEST_CASE("a grid recipe trains as one run with --no-grid", "[trainer][cli][grid]") {
  FashionGrid fixture;
  const std::string out = fixture.dir.file("one");
  std::string output;
  INFO(output);
  REQUIRE(test::run_cli("run " + fixture.grid + " --no-grid --quiet --output-dir " + out +
                            " --set training.epochs=1",
                        output) == 0);
  // One run with the recipe's own values: its folder holds the run, no points, no table.
  CHECK_THAT(test::text_of(out + "/summary.json"), Catch::Contains("\"finished\": true"));
  CHECK_FALSE(fs::exists(out + "/point-000"));
  CHECK_FALSE(fs::exists(out + "/grid.csv"));
  CHECK_THAT(test::text_of(out + "/recipe.toml"), Catch::Contains("lr = 0.5"));
}

TEST_CASE("a grid folder remembers its recipe and data, and one process at a time trains into it",
          "[trainer][cli][grid]") {
  FashionGrid fixture;
  const std::string out = fixture.dir.file("grid");
  const std::string command =
      "run " + fixture.base + " --grid lr.lr=0.05,0.2 --placement sequential --output-dir " + out;
  std::string output;
  INFO(output);
  // Every point stops after its first step: the folder holds the grid and its record.
  REQUIRE(test::run_cli(command + " --stop-after-steps 1", output) == 0);
  CHECK_THAT(test::text_of(out + "/made_from.tsv"),
             Catch::Contains("recipe training.epochs\t2") &&
                 Catch::Contains("data " + fixture.dir.file("train.beton") + "\t"));
  const std::string pid = std::to_string(::getpid());

  // Another process holds a point's folder, or the grid's: refused, naming the folder and pid.
  {
    const train::FolderLock held(out + "/point-001", "point folder");
    CHECK(test::run_cli(command, output) == 1);
    CHECK_THAT(output,
               Catch::Contains("point folder " + out + "/point-001 is in use by process " + pid));
  }
  {
    const train::FolderLock held(out, "grid folder");
    CHECK(test::run_cli(command, output) == 1);
    CHECK_THAT(output, Catch::Contains("grid folder " + out + " is in use by process " + pid));
    CHECK(test::run_cli(command + " --fresh", output) == 1);
    CHECK_THAT(output, Catch::Contains("is in use by process " + pid));
  }
  // So is a single run's folder.
  {
    const std::string run_dir = fixture.dir.file("single");
    const train::FolderLock held(run_dir, "run folder");
    CHECK(test::run_cli("run " + fixture.base + " --output-dir " + run_dir, output) == 1);
    CHECK_THAT(output, Catch::Contains("run folder " + run_dir + " is in use by process " + pid));
    CHECK_FALSE(fs::exists(run_dir + "/log.jsonl"));
  }
  const std::string log_before = test::text_of(out + "/point-000/log.jsonl");

  // Another training.epochs: refused before any work, naming the key and --fresh.
  CHECK(test::run_cli(command + " --set training.epochs=3", output) == 2);
  CHECK_THAT(output,
             Catch::Contains("training.epochs was 2 and is now 3") && Catch::Contains("--fresh"));
  // The training file written again with other samples: the same name, another identity.
  REQUIRE(test::run_cli("write fashion-mnist --split train --subset 200 --write-mode raw --quiet " +
                            std::string("--output ") + fixture.dir.file("train.beton"),
                        output) == 0);
  CHECK(test::run_cli(command, output) == 2);
  CHECK_THAT(output,
             Catch::Contains("the data file " + fixture.dir.file("train.beton") + " changed") &&
                 Catch::Contains("--fresh"));
  CHECK(test::text_of(out + "/point-000/log.jsonl") == log_before);

  // --fresh sets the earlier results aside, never deleting them, and starts afresh.
  REQUIRE(test::run_cli(command + " --stop-after-steps 1 --fresh", output) == 0);
  CHECK_THAT(output, Catch::Contains("were moved to " + out + "-before-"));
  std::string aside;
  for (const auto& entry : fs::directory_iterator(fixture.dir.path())) {
    if (entry.path().filename().string().rfind("grid-before-", 0) == 0) aside = entry.path();
  }
  REQUIRE(!aside.empty());
  CHECK(test::text_of(aside + "/point-000/log.jsonl") == log_before);
  CHECK(test::run_cli(command + " --stop-after-steps 1", output) == 0);
}
