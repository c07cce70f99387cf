// `ffcv ablate` training sweeps: each cell one `ffcv run` of a recipe, its accuracy in the table.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ffcv/train/recipe.hpp"
#include "ffcv/train/run_log.hpp"
#include "tiny_dataset.hpp"

using namespace ffcv;

namespace {

std::vector<std::string> csv_rows(const std::string& path) {
  std::vector<std::string> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  return rows;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  for (std::string field; std::getline(stream, field, ',');) fields.push_back(field);
  return fields;
}

}  // namespace

TEST_CASE("ffcv ablate trains each cell of a recipe sweep and tables its accuracy",
          "[trainer][cli][ablate]") {
  test::TempDir dir;
  const train::Recipe recipe = test::tiny_recipe(dir);
  train::write_text_file(dir.file("tiny.toml"), train::recipe_to_toml(recipe));
  const std::string spec = dir.file("orders.toml");
  std::ofstream(spec) << "[train]\nrecipe = \"" << dir.file("tiny.toml")
                      << "\"\nset = [\"training.epochs=1\"]\n\n[sweep]\n"
                      << "\"data.order\" = [\"random\", \"quasi_random\"]\n";
  const std::string out = dir.file("out");
  std::string output;
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  INFO(output);
  const std::vector<std::string> rows = csv_rows(out + "/ablation.csv");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] ==
        "data.order,status,samples_per_s,peak_rss_bytes,file_bytes,read_bytes_per_epoch,"
        "read_per_file,loader_wait_share,distinct_pages_per_batch,seconds,val_top1,error");
  // Each cell's accuracy is its own run's, read back from the run folder.
  std::size_t runs = 0;
  std::vector<double> accuracies;
  for (const auto& entry : std::filesystem::directory_iterator(out + "/runs")) {
    const std::string summary = test::text_of(entry.path().string() + "/summary.json");
    const std::size_t at = summary.find("\"val_top1\": ");
    REQUIRE(at != std::string::npos);
    accuracies.push_back(std::stod(summary.substr(at + 12)));
    CHECK_THAT(summary, Catch::Contains("\"epochs_done\": 1"));  // the fixed override applied
    ++runs;
  }
  CHECK(runs == 2);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const std::vector<std::string> fields = split(rows[i]);
    REQUIRE(fields.size() >= 11);
    CHECK(fields[1] == "ok");
    CHECK(std::stod(fields[2]) > 0);  // training images/s
    const double top1 = std::stod(fields[10]);
    CHECK(std::find_if(accuracies.begin(), accuracies.end(),
                       [&](double a) { return std::abs(a - top1) < 1e-4; }) != accuracies.end());
  }
  CHECK_THAT(test::text_of(out + "/ablation.md"), Catch::Contains("| data.order | val top-1 |"));

  // A value the recipe refuses stops the sweep before any run, naming the cell: a bad spec, exit 2.
  std::ofstream(spec) << "[train]\nrecipe = \"" << dir.file("tiny.toml")
                      << "\"\n[sweep]\n\"data.order\" = [\"random\", \"shuffled\"]\n";
  CHECK(test::run_cli("ablate " + spec + " --output " + dir.file("bad"), output) == 2);
  CHECK_THAT(output, Catch::Contains("cell data.order=shuffled"));
  CHECK_FALSE(std::filesystem::exists(dir.file("bad")));
  // Loader settings of a training sweep are recipe keys, not bench options.
  std::ofstream(spec) << "[train]\nrecipe = \"" << dir.file("tiny.toml")
                      << "\"\n[sweep]\nworkers = [1, 2]\n";
  CHECK(test::run_cli("ablate " + spec, output) == 2);
  CHECK_THAT(output, Catch::Contains("recipe keys such as data.num_workers"));
}

TEST_CASE("a training cell that fails is tabled with its error line, not its run folder",
          "[trainer][cli][ablate]") {
  test::TempDir dir;
  const train::Recipe recipe = test::tiny_recipe(dir);  // 64 training samples
  train::write_text_file(dir.file("tiny.toml"), train::recipe_to_toml(recipe));
  const std::string spec = dir.file("batches.toml");
  // Batches of 1000 from 64 samples: the run starts (its output names its folder) and fails.
  std::ofstream(spec) << "[train]\nrecipe = \"" << dir.file("tiny.toml")
                      << "\"\nset = [\"training.epochs=1\"]\n\n[sweep]\n"
                      << "\"training.batch_size\" = [8, 1000]\n";
  const std::string out = dir.file("out");
  std::string output;
  CHECK(test::run_cli("ablate " + spec + " --output " + out, output) == 1);
  INFO(output);
  const std::vector<std::string> rows = csv_rows(out + "/ablation.csv");
  REQUIRE(rows.size() == 3);
  CHECK(split(rows[1])[1] == "ok");
  CHECK(split(rows[2])[1] == "failed");
  CHECK_THAT(rows[2], Catch::Contains("fewer samples per rank than one batch of 1000") &&
                          !Catch::Contains("output:"));
  CHECK_THAT(test::text_of(out + "/ablation.md"),
             Catch::Contains("failed: ffcv run: error: ") &&
                 Catch::Contains("fewer samples per rank than one batch of 1000"));
  CHECK_THAT(output, Catch::Contains("failed: ffcv run: error: "));
}
