// What `ffcv run` leaves on disk when it cannot train: a dataset whose labels do not fit the
// model is refused before any folder is made, an --output-dir holding other files is refused
// untouched, and a run that fails after its folder was made removes that folder again.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ffcv/reader.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/train/trainer.hpp"
#include "ffcv/util/errors.hpp"
#include "tiny_dataset.hpp"

using namespace ffcv;
using namespace ffcv::train;
namespace fs = std::filesystem;

TEST_CASE("labels that do not fit model.num_classes are refused before the run folder",
          "[trainer][cli]") {
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);  // labels 0 and 1
  CHECK(read_label_range(recipe.data.train, "label").min == 0);
  CHECK(read_label_range(recipe.data.train, "label").max == 1);
  // Another dataset in its place (as a stale file of another dataset would be): labels 0..4.
  DatasetWriter(recipe.data.train, {{"image", std::make_shared<RgbImageField>()},
                                    {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(20, [](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(20, 20, i),
                                       static_cast<std::int64_t>(i % 5)};
      }));
  CHECK_THROWS_WITH(check_labels_fit_model(recipe),
                    Catch::Contains("data.train") && Catch::Contains("0..4") &&
                        Catch::Contains("model.num_classes = 2") &&
                        Catch::Contains("set model.num_classes = 5"));
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("run");
  CHECK_THROWS_AS(run_training(recipe, options), ConfigError);
  CHECK(!fs::exists(dir.file("run")));

  write_text_file(dir.file("tiny.toml"), recipe_to_toml(recipe));
  std::string output;
  CHECK(test::run_cli("run " + dir.file("tiny.toml"), output) == 1);
  CHECK_THAT(output, Catch::Contains("labels range over 0..4"));
  CHECK(!fs::exists(recipe.logging.folder));  // not even the logging folder

  recipe.model.num_classes = 5;
  CHECK_NOTHROW(check_labels_fit_model(recipe));
  recipe.data.label_field = "image";
  CHECK_THROWS_WITH(check_labels_fit_model(recipe), Catch::Contains("integer labels"));
}

TEST_CASE("ffcv run keeps --output-dir to run folders and removes a folder it made in vain",
          "[trainer][cli]") {
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  write_text_file(dir.file("tiny.toml"), recipe_to_toml(recipe));
  std::string output;

  // A folder of other files, or a file: refused as they are.
  fs::create_directories(dir.file("data"));
  write_text_file(dir.file("data/notes.txt"), "keep");
  CHECK(test::run_cli("run " + dir.file("tiny.toml") + " --output-dir " + dir.file("data"),
                      output) == 2);
  CHECK_THAT(output, Catch::Contains("no recipe.toml"));
  CHECK(test::run_cli("run " + dir.file("tiny.toml") + " --output-dir " + recipe.data.train,
                      output) == 2);
  CHECK(std::vector<std::string>{"notes.txt"} ==
        std::vector<std::string>{fs::directory_iterator(dir.file("data"))->path().filename()});

  // A run that fails once its folder exists (an unknown operation is found when the loaders
  // are built) leaves neither the run folder nor the logging folder it created.
  CHECK(test::run_cli(
            "run " + dir.file("tiny.toml") + " --set 'augment.operations=[\"swap_chanels\"]'",
            output) == 1);
  CHECK_THAT(output, Catch::Contains("swap_chanels"));
  CHECK(!fs::exists(recipe.logging.folder));

  // A finished run keeps its folder, and that folder may be named again as --output-dir.
  REQUIRE(test::run_cli("run " + dir.file("tiny.toml") + " --quiet --output-dir " +
                            dir.file("run") + " --set training.epochs=1",
                        output) == 0);
  CHECK(fs::exists(dir.file("run/summary.json")));
  CHECK(test::run_cli("run " + dir.file("tiny.toml") + " --quiet --output-dir " + dir.file("run") +
                          " --set training.epochs=1",
                      output) == 0);
}

TEST_CASE("data.on_error = skip trains past undecodable samples and logs how many",
          "[trainer][on_error]") {
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  // The training set again as JPEGs, two of which do not start with a JPEG marker.
  RgbImageOptions jpeg;
  jpeg.write_mode = ImageWriteMode::kJpg;
  DatasetWriter(recipe.data.train, {{"image", std::make_shared<RgbImageField>(jpeg)},
                                    {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(64, [](std::uint64_t i) {
        const std::int64_t label = static_cast<std::int64_t>(i % 2);
        RgbImage image = test::gradient_image(24, 20, i);
        for (auto& p : image.pixels) p = static_cast<std::uint8_t>(label ? 128 + p / 2 : p / 2);
        return std::vector<FieldValue>{image, label};
      }));
  test::break_jpeg_samples(recipe.data.train, {5, 40});
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("fails");
  CHECK_THROWS_WITH(run_training(recipe, options), Catch::Contains("sample 5"));

  recipe.data.on_error = "skip";
  recipe.data.max_skipped_fraction = 0.05;  // 3 of 64
  options.run_dir = dir.file("skips");
  const RunSummary summary = run_training(recipe, options);
  CHECK(summary.finished);
  std::ifstream log(dir.file("skips/log.jsonl"));
  int epochs = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\": \"epoch\"") == std::string::npos) continue;
    ++epochs;
    CHECK_THAT(line, Catch::Contains("\"skipped_samples\": 2"));
  }
  CHECK(epochs == recipe.training.epochs);
}
