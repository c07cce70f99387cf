// Recipes: strict loading, error messages, overrides, the round trip through TOML, and every
// recipe file in the repository.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ffcv/train/override_error.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/train/resume_check.hpp"
#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"

#include "test_support.hpp"

namespace ffcv::train {
namespace {

using ffcv::test::TempDir;

const char* const kData = "[data]\ntrain = \"t.beton\"\nval = \"v.beton\"\n";

std::string write_recipe(const TempDir& dir, const std::string& text,
                         const std::string& name = "recipe.toml") {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// The ConfigError message of loading `text` (with `overrides`), or "" when it loads.
std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  TempDir dir;
  try {
    load_recipe(write_recipe(dir, text), overrides);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

Recipe load_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  TempDir dir;
  return load_recipe(write_recipe(dir, text), overrides);
}

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::Equals;

}  // namespace

TEST_CASE("a recipe with only the data paths gets every default", "[recipe]") {
  TempDir dir;
  const std::string path = write_recipe(dir, kData, "tiny_run.toml");
  const Recipe recipe = load_recipe(path);
  Recipe expected;
  expected.data.train = "t.beton";
  expected.data.val = "v.beton";
  expected.name = "tiny_run";
  expected.source = path;
  CHECK(recipe == expected);
  CHECK(recipe.lr.lr == 0.5);
  CHECK(recipe.training.epochs == 30);
  CHECK(recipe.augment.ratio[1] == 4.0 / 3.0);
  CHECK(recipe.data.mean[0] == 0.485 * 255);
}

TEST_CASE("every training recipe in recipes/ loads", "[recipe]") {
  const std::filesystem::path root = std::filesystem::path(FFCV_SOURCE_DIR) / "recipes";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    // recipes/saga/ holds SAGA recipes, loaded by tests/saga/saga_test.cpp; recipes/detection/
    // the detection experiment's, loaded by tests/python/test_detection_recipe.py.
    const std::filesystem::path folder = entry.path().parent_path().filename();
    if (folder == "saga" || folder == "detection") continue;
    if (entry.is_regular_file() && entry.path().extension() == ".toml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 12);
  for (const std::string& file : files) {
    INFO(file);
    CHECK_NOTHROW(load_recipe(file));
  }
}

TEST_CASE("rn50_16_epochs holds the paper's values", "[recipe]") {
  const Recipe r =
      load_recipe(std::string(FFCV_SOURCE_DIR) + "/recipes/imagenet/rn50_16_epochs.toml");
  CHECK(r.name == "rn50_16_epochs");
  CHECK(r.model.arch == "resnet50");
  CHECK(r.model.blurpool);
  CHECK(r.training.epochs == 16);
  CHECK(r.resolution.min_res == 160);
  CHECK(r.resolution.max_res == 192);
  CHECK(r.resolution.start_ramp == 11);
  CHECK(r.resolution.end_ramp == 13);
  CHECK(r.lr.lr == 1.7);
  CHECK(r.lr.peak_epoch == 2);
  CHECK(r.lr.schedule == "triangular");
  CHECK(r.training.batch_size == 512);
  CHECK(r.training.weight_decay == 1e-4);
  CHECK(r.training.precision == "fp16");
  CHECK(r.dist.world_size == 8);
  CHECK(r.data.order == "random");
  CHECK(r.data.seed == 0);
  CHECK(r.validation.resolution == 256);
  CHECK(r.validation.every == 1);
  CHECK(r.data.train == "data/imagenet/train_500_0.50_90.beton");
}

TEST_CASE("the ImageNet recipes follow the released configs for every epoch count", "[recipe]") {
  for (const int epochs : {16, 24, 32, 40, 56, 88}) {
    for (const std::string arch : {"rn18", "rn50"}) {
      const std::string name = arch + "_" + std::to_string(epochs) + "_epochs";
      INFO(name);
      const Recipe r =
          load_recipe(std::string(FFCV_SOURCE_DIR) + "/recipes/imagenet/" + name + ".toml");
      const bool rn50 = arch == "rn50";
      CHECK(r.training.epochs == epochs);
      CHECK(r.resolution.start_ramp == 3 * epochs / 4 - 1);
      CHECK(r.resolution.end_ramp == 7 * epochs / 8 - 1);
      CHECK(r.model.arch == (rn50 ? "resnet50" : "resnet18"));
      CHECK(r.training.batch_size == (rn50 ? 512 : 1024));
      CHECK(r.lr.lr == (rn50 ? 1.7 : 0.5));
      CHECK(r.training.weight_decay == (rn50 ? 1e-4 : 5e-5));
      CHECK(r.dist.world_size == (rn50 ? 8 : 1));
      CHECK(r.data.order == (rn50 ? "random" : "quasi_random"));
      CHECK(r.validation.every == (rn50 ? 1 : 0));
      CHECK(r.model.num_classes == 1000);
      CHECK(r.training.label_smoothing == 0.1);
    }
  }
}

TEST_CASE("an unknown key names its place and the closest valid key", "[recipe]") {
  const std::string message = load_error(std::string(kData) + "[training]\nepoch = 3\n");
  CHECK_THAT(message, Contains("recipe.toml:5:1: unknown key 'epoch' in [training]"));
  CHECK_THAT(message, EndsWith("(did you mean 'training.epochs'?)"));

  // A key of another section is suggested there.
  CHECK_THAT(load_error(std::string(kData) + "[training]\nlr = 3\n"),
             Contains("unknown key 'lr' in [training] (did you mean 'lr.lr'?)"));
  // Nothing close: no suggestion.
  CHECK_THAT(load_error(std::string(kData) + "[training]\nzzzzzzzz = 3\n"),
             EndsWith("unknown key 'zzzzzzzz' in [training]"));
  // A nested table is an unknown key too.
  CHECK_THAT(load_error(std::string(kData) + "[training.extra]\nepochs = 3\n"),
             Contains("unknown key 'extra' in [training]"));
}

TEST_CASE("an unknown section names its place and the closest section", "[recipe]") {
  const std::string message = load_error(std::string(kData) + "[trainig]\nepochs = 3\n");
  CHECK_THAT(message, Contains("recipe.toml:4:"));
  CHECK_THAT(message, Contains("unknown section [trainig] (did you mean [training]?)"));
  CHECK_THAT(load_error(std::string("epochs = 3\n") + kData),
             Contains("recipe.toml:1:1: key 'epochs' is outside any section (did you mean "
                      "'training.epochs'?)"));
  CHECK_THAT(load_error(std::string("training = 3\n") + kData),
             Contains("'training' must be a table ([training]), got the integer 3"));
}

TEST_CASE("a value of the wrong type names the key, the expected type and its place", "[recipe]") {
  CHECK_THAT(load_error(std::string(kData) + "[training]\nepochs = \"ten\"\n"),
             EndsWith("recipe.toml:5:10: training.epochs must be an integer, got the string "
                      "\"ten\""));
  // Floats are not integers...
  CHECK_THAT(load_error(std::string(kData) + "[training]\nepochs = 5.0\n"),
             Contains("training.epochs must be an integer, got the float 5.0"));
  // ...but integers are numbers.
  CHECK(load_text(std::string(kData) + "[lr]\nlr = 2\n").lr.lr == 2.0);
  CHECK_THAT(load_error(std::string(kData) + "[augment]\nflip = 1\n"),
             Contains("recipe.toml:5:8: augment.flip must be true or false, got the integer 1"));
  CHECK_THAT(load_error("[data]\ntrain = 3\nval = \"v\"\n"),
             Contains("recipe.toml:2:9: data.train must be a string, got the integer 3"));
  CHECK_THAT(load_error(std::string(kData) + "[augment]\nscale = 0.5\n"),
             Contains("augment.scale must be an array of 2 numbers, got the float 0.5"));
  CHECK_THAT(load_error(std::string(kData) + "[augment]\nscale = [0.5]\n"),
             Contains("augment.scale must be an array of 2 numbers, got 1 values"));
  CHECK_THAT(load_error(std::string(kData) + "[augment]\nscale = [0.5, \"1\"]\n"),
             Contains("recipe.toml:5:15: augment.scale must be an array of 2 numbers, got the "
                      "string \"1\""));
  CHECK_THAT(load_error(std::string(kData) + "[lr]\nlr = inf\n"),
             Contains("lr.lr must be a finite number"));
}

TEST_CASE("an unknown choice lists the allowed values", "[recipe]") {
  CHECK_THAT(load_error(std::string(kData) + "[model]\narch = \"resnet34\"\n"),
             EndsWith("recipe.toml:5:8: model.arch must be one of resnet18, resnet50; got "
                      "\"resnet34\""));
  CHECK_THAT(load_error(std::string(kData) + "[training]\nprecision = \"half\"\n"),
             Contains("training.precision must be one of fp32, fp16, bf16"));
  CHECK_THAT(load_error("[data]\ntrain = \"t\"\nval = \"v\"\norder = \"shuffled\"\n"),
             Contains("data.order must be one of sequential, random, quasi_random"));
  CHECK_THAT(load_error("[data]\ntrain = \"t\"\nval = \"v\"\non_error = \"ignore\"\n"),
             Contains("data.on_error must be one of fail, skip"));
}

TEST_CASE("an out-of-range value states the range", "[recipe]") {
  CHECK_THAT(load_error(std::string(kData) + "[training]\nepochs = 0\n"),
             EndsWith("recipe.toml:5:10: training.epochs must be >= 1, got 0"));
  CHECK_THAT(load_error(std::string(kData) + "[augment]\nscale = [0.1, 1.5]\n"),
             Contains("augment.scale[1] must be in (0, 1], got 1.5"));
  CHECK_THAT(load_error(std::string(kData) + "[augment]\nscale = [0.9, 0.5]\n"),
             Contains("augment.scale must be [low, high] with low <= high, got [0.9, 0.5]"));
  CHECK_THAT(load_error(std::string(kData) + "[dist]\nport = 70000\n"),
             Contains("dist.port must be in [1, 65535], got 70000"));
  CHECK_THAT(load_error(std::string(kData) + "[lr]\nlr = 0\n"),
             Contains("lr.lr must be > 0, got 0"));
  CHECK_THAT(load_error(std::string(kData) + "[training]\nmomentum = 1\n"),
             Contains("training.momentum must be in [0, 1), got 1"));
  CHECK_THAT(load_error(std::string(kData) + "[training]\nepochs = 9999999999\n"),
             Contains("training.epochs is out of range"));
  CHECK_THAT(load_error("[data]\ntrain = \"t\"\nval = \"v\"\nseed = -1\n"),
             Contains("data.seed must be >= 0, got -1"));
  CHECK_THAT(load_error("[data]\ntrain = \"t\"\nval = \"v\"\nmax_skipped_fraction = 2\n"),
             Contains("data.max_skipped_fraction must be in [0, 1], got 2"));
  CHECK_THAT(load_error(std::string(kData) + "[resolution]\nmin_res = 192\nmax_res = 160\n"),
             EndsWith("recipe.toml: resolution.min_res (192) must be <= resolution.max_res (160)"));
  CHECK_THAT(load_error(std::string(kData) + "[resolution]\nstart_ramp = 5\nend_ramp = 4\n"),
             Contains("resolution.end_ramp (4) must be >= resolution.start_ramp (5)"));
}

TEST_CASE("a TOML syntax error reports the parser's message and place", "[recipe]") {
  const std::string message = load_error(std::string(kData) + "[training]\nepochs = = 3\n");
  CHECK_THAT(message, Contains("recipe.toml:5:"));
  CHECK_THAT(message, Contains(": TOML syntax error: "));
  CHECK_THAT(load_error(std::string(kData) + "[training\n"), Contains("recipe.toml:4:"));
  // A table defined twice.
  CHECK_THAT(load_error(std::string(kData) + "[data]\n"), Contains("TOML syntax error"));
}

TEST_CASE("data.train and data.val are required", "[recipe]") {
  CHECK_THAT(load_error("[data]\nval = \"v.beton\"\n"), Contains("data.train is required"));
  CHECK_THAT(load_error("[data]\ntrain = \"t.beton\"\n"), Contains("data.val is required"));
  CHECK_THAT(load_error(""), Contains("data.train is required"));
  // Overrides can give them.
  const Recipe recipe = load_text("", {"data.train=/data/train.beton", "data.val=v.beton"});
  CHECK(recipe.data.train == "/data/train.beton");
  CHECK(recipe.data.val == "v.beton");
}

TEST_CASE("overrides are parsed as TOML values, bare words as strings", "[recipe]") {
  const Recipe recipe = load_text(
      std::string(kData) + "[training]\nepochs = 88\n",
      {"training.epochs=5", "lr.lr=1.7", "lr.peak_epoch=1", "augment.scale=[0.35,1]",
       "model.arch=resnet50", "model.stem=\"small\"", "augment.flip=false", "logging.folder=2024",
       "checkpoint.resume=", "training.wd_exclude=a\"b\\c", "data.seed=7", "data.seed=8"});
  CHECK(recipe.training.epochs == 5);
  CHECK(recipe.lr.lr == 1.7);
  CHECK(recipe.lr.peak_epoch == 1.0);
  CHECK(recipe.augment.scale == std::array<double, 2>{0.35, 1.0});
  CHECK(recipe.model.arch == "resnet50");
  CHECK(recipe.model.stem == "small");
  CHECK_FALSE(recipe.augment.flip);
  CHECK(recipe.logging.folder == "2024");  // a string key takes the text as written
  CHECK(recipe.checkpoint.resume.empty());
  CHECK(recipe.training.wd_exclude == "a\"b\\c");
  CHECK(recipe.data.seed == 8);  // the last one wins
}

TEST_CASE("a bad override names the override", "[recipe]") {
  CHECK_THAT(load_error(kData, {"training.epoch=3"}),
             Equals("--set training.epoch=3: unknown key 'training.epoch' (did you mean "
                    "'training.epochs'?)"));
  CHECK_THAT(load_error(kData, {"trainig.epochs=3"}),
             Contains("unknown key 'trainig.epochs' (did you mean 'training.epochs'?)"));
  CHECK_THAT(load_error(kData, {"epochs=3"}),
             Contains("--set epochs=3: unknown key 'epochs' (did you mean 'training.epochs'?)"));
  CHECK_THAT(load_error(kData, {"training.epochs=five"}),
             Equals("--set training.epochs=five: training.epochs must be an integer, got the "
                    "string \"five\""));
  CHECK_THAT(load_error(kData, {"training.epochs=2.5"}),
             Contains("training.epochs must be an integer, got the float 2.5"));
  CHECK_THAT(load_error(kData, {"model.arch=resnet34"}),
             Equals("--set model.arch=resnet34: model.arch must be one of resnet18, resnet50; "
                    "got \"resnet34\""));
  CHECK_THAT(load_error(kData, {"augment.scale=[0.35]"}),
             Contains("--set augment.scale=[0.35]: augment.scale must be an array of 2 numbers"));
  CHECK_THAT(load_error(kData, {"model=resnet50"}),
             Equals("--set model=resnet50: 'model' is a section; give one key as "
                    "model.KEY=VALUE"));
  CHECK_THAT(load_error(kData, {"training.epochs"}),
             Equals("--set training.epochs: expected section.key=value"));
  // A value that is more than one TOML value stays one string (and is then the wrong type).
  CHECK_THAT(load_error(kData, {"training.epochs=3\nlr = 1"}),
             Contains("training.epochs must be an integer, got the string"));
  // Bytes that are not UTF-8 would be written into the run's recipe.toml and make it unreadable
  // (found by the recipe fuzz harness): a lone continuation byte, an overlong '/', a surrogate.
  for (const char* bad :
       {"data.train=random\xa8", "data.train=\xc0\xaf", "data.val=\xed\xa0\x80"}) {
    CHECK_THAT(load_error(kData, {bad}), Contains("is not valid UTF-8"));
  }
  CHECK_THAT(load_error(kData, {"data.train=caf\xc3\xa9.beton"}), Equals(""));  // é is fine
}

TEST_CASE("recipe_to_toml writes every key and reads back equal", "[recipe]") {
  TempDir dir;
  const std::string original_path =
      std::string(FFCV_SOURCE_DIR) + "/recipes/imagenet/rn50_16_epochs.toml";
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"lr.lr=0.30000000000000004", "training.wd_exclude=a\"b\\c\td", "data.train=dir/tr ain.beton",
       "lr.schedule=step", "data.seed=123456789012", "augment.ratio=[0.1,3e5]",
       "checkpoint.resume=runs/x/checkpoint.pt", "model.width=0.25", "training.label_smoothing=0",
       "data.on_error=skip", "data.max_skipped_fraction=0.125"},
  };
  for (const auto& overrides : variants) {
    const Recipe original = load_recipe(original_path, overrides);
    const std::string text = recipe_to_toml(original);
    for (const std::string& key : recipe_keys()) {
      const std::string bare = key.substr(key.find('.') + 1);
      CHECK_THAT(text, Contains("\n" + bare + " = "));
    }
    Recipe again = load_recipe(write_recipe(dir, text, "resolved.toml"));
    CHECK(again.name == "resolved");
    again.name = original.name;
    again.source = original.source;
    CHECK(again == original);
  }
  Recipe defaults;
  defaults.data.train = "a";
  defaults.data.val = "b";
  Recipe again = load_recipe(write_recipe(dir, recipe_to_toml(defaults), "defaults.toml"));
  again.name.clear();
  again.source.clear();
  CHECK(again == defaults);
}

TEST_CASE("recipe_keys lists every key once", "[recipe]") {
  const std::vector<std::string> keys = recipe_keys();
  CHECK(keys.size() == 74);  // drop_last and the HTTP limits joined with the loader settings
  CHECK(keys.front() == "data.train");
  CHECK(keys.back() == "checkpoint.resume");
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
}

TEST_CASE("a missing recipe file is a ConfigError naming the path", "[recipe]") {
  TempDir dir;
  const std::string path = dir.file("no_such_recipe.toml");
  try {
    load_recipe(path);
    FAIL("no error");
  } catch (const ConfigError& error) {
    CHECK(std::string(error.what()) == "recipe not found: " + path);
  }
  CHECK_THROWS_AS(load_recipe(dir.path()), ConfigError);  // a directory
}

TEST_CASE("closest_name suggests within the distance only", "[recipe]") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("epochs", "epochs") == 0);
  const std::vector<std::string> names = {"epochs", "batch_size", "momentum"};
  CHECK(closest_name("epoch", names) == "epochs");
  CHECK(closest_name("bach_size", names) == "batch_size");
  CHECK(closest_name("zzzzzz", names).empty());
  CHECK(closest_name("ecophs", names, 1).empty());
}

TEST_CASE("a triangular peak after the last epoch is refused", "[recipe]") {
  TempDir dir;
  const std::string path = write_recipe(dir, "[data]\ntrain = \"t\"\nval = \"v\"\n", "p.toml");
  CHECK_THROWS_WITH(load_recipe(path, {"training.epochs=1"}),
                    Catch::Contains("lr.peak_epoch (2) must be <= training.epochs (1)"));
  // The advice is a whole epoch before the last (the rate is taken at whole epochs: a peak of
  // 0.5 in a 1-epoch run leaves it at start_factor * lr.lr; stop_and_resume_test.cpp follows it).
  CHECK_THROWS_WITH(load_recipe(path, {"training.epochs=1"}),
                    Catch::Contains("--set lr.peak_epoch=0 (the rate then starts at lr.lr"));
  CHECK_THROWS_WITH(load_recipe(path, {"training.epochs=5", "lr.peak_epoch=6"}),
                    Catch::Contains("--set lr.peak_epoch=2 (the rate then rises to lr.lr by "
                                    "epoch 2 and falls to 0 by epoch 5"));
  CHECK(load_recipe(path, {"training.epochs=1", "lr.peak_epoch=0"}).lr.peak_epoch == 0);
  CHECK(load_recipe(path, {"training.epochs=1", "lr.peak_epoch=0.5"}).lr.peak_epoch == 0.5);
  CHECK(load_recipe(path, {"training.epochs=1", "lr.schedule=step"}).training.epochs == 1);
}

TEST_CASE("lists of strings: op libraries and extra operations", "[recipe]") {
  TempDir dir;
  const std::string text =
      "[data]\ntrain = \"t\"\nval = \"v\"\nop_libraries = [\"lib/a.so\"]\n"
      "[augment]\noperations = [\"swap_channels:order=[2,1,0]\", \"cutout:size=4\"]\n"
      "mixup_alpha = 0.2\n";
  const Recipe recipe = load_recipe(write_recipe(dir, text, "lists.toml"));
  CHECK(recipe.data.op_libraries == std::vector<std::string>{"lib/a.so"});
  CHECK(recipe.augment.operations ==
        std::vector<std::string>{"swap_channels:order=[2,1,0]", "cutout:size=4"});
  CHECK(recipe.augment.mixup_alpha == 0.2);
  Recipe again = load_recipe(write_recipe(dir, recipe_to_toml(recipe), "again.toml"));
  CHECK(again.augment == recipe.augment);
  CHECK(again.data == recipe.data);
  CHECK_THROWS_WITH(load_recipe(write_recipe(dir,
                                             "[data]\ntrain = \"t\"\nval = \"v\"\n"
                                             "op_libraries = [1]\n",
                                             "bad.toml")),
                    Catch::Contains("data.op_libraries[0] must be a string"));
  CHECK_THROWS_WITH(
      load_recipe(write_recipe(dir, "[data]\ntrain = \"t\"\nval = \"v\"\n", "ok.toml"),
                  {"augment.operations=[\"flip\", \"\"]"}),
      Catch::Contains("must not be empty"));
  CHECK_THROWS_WITH(
      load_recipe(write_recipe(dir, "[data]\ntrain = \"t\"\nval = \"v\"\n", "ok.toml"),
                  {"augment.mixup_alpha=-1"}),
      Catch::Contains("augment.mixup_alpha must be >= 0"));
}

TEST_CASE("a --set the recipe refuses is an OverrideError, a bad recipe file is not", "[recipe]") {
  TempDir dir;
  const std::string path = write_recipe(dir, "[data]\ntrain = \"t\"\nval = \"v\"\n", "o.toml");
  for (const std::string bad : {"training.epochs=0", "training.epoch=3", "lr.lr=fast",
                                "data.order=shuffled", "training", "model=resnet18"}) {
    INFO(bad);
    CHECK_THROWS_AS(load_recipe(path, {bad}), OverrideError);
  }
  // Rules between keys, and the file's own values, are the recipe's errors.
  try {
    load_recipe(path, {"training.epochs=1"});
    FAIL("loaded");
  } catch (const OverrideError&) {
    FAIL("the peak rule is the recipe's, not one override's");
  } catch (const ConfigError&) {
  }
  const std::string bad_file =
      write_recipe(dir, "[data]\ntrain = \"t\"\nval = \"v\"\n[training]\nepochs = 0\n", "f.toml");
  try {
    load_recipe(bad_file);
    FAIL("loaded");
  } catch (const OverrideError&) {
    FAIL("an error of the file is no override's");
  } catch (const ConfigError& error) {
    CHECK_THAT(error.what(), Contains("f.toml:"));
  }
}

TEST_CASE("a resume is compared with the checkpoint's recipe, key by key", "[recipe][resume]") {
  TempDir dir;
  const std::string path = write_recipe(dir, "[data]\ntrain = \"t\"\nval = \"v\"\n", "r.toml");
  const std::string saved = recipe_to_toml(
      load_recipe(path, {"training.epochs=3", "data.train=other.beton", "data.num_workers=4"}));
  // What only decides where logs go or how fast batches come may differ.
  const std::string same = recipe_to_toml(
      load_recipe(path, {"training.epochs=3", "data.train=other.beton", "data.num_workers=1",
                         "data.batches_ahead=5", "training.threads=2", "logging.folder=elsewhere",
                         "checkpoint.resume=runs/a/checkpoint.pt", "checkpoint.every=2"}));
  CHECK(resume_differences(saved, same).empty());
  CHECK_NOTHROW(check_resume_recipe("runs/a/checkpoint.pt", saved, same));
  // The recipe file alone: both overrides are missing, and named.
  const std::string plain = recipe_to_toml(load_recipe(path, {"checkpoint.resume=c.pt"}));
  const std::vector<ResumeDifference> differences = resume_differences(saved, plain);
  REQUIRE(differences.size() == 2);
  CHECK(differences[0].key == "data.train");
  CHECK(differences[0].saved == "'other.beton'");  // as TOML writes a string
  CHECK(differences[0].now == "'t'");
  CHECK(differences[1].key == "training.epochs");
  CHECK(differences[1].saved == "3");
  CHECK(differences[1].now == "30");
  // Refused, naming both and how to resume; with the run's recipe.toml beside the checkpoint,
  // the command that resumes with it.
  const std::string run = dir.file("run a");
  std::filesystem::create_directories(run);
  CHECK_THROWS_WITH(check_resume_recipe(run + "/checkpoint.pt", saved, plain),
                    Contains("data.train was 'other.beton' and is now 't'; training.epochs "
                             "was 3 and is now 30") &&
                        Contains("resume with the recipe and --set overrides"));
  std::ofstream(run + "/recipe.toml") << saved;
  CHECK_THROWS_WITH(check_resume_recipe(run + "/checkpoint.pt", saved, plain),
                    Contains("resume with the recipe it saved: ffcv run '" + run +
                             "/recipe.toml' --output-dir '" + run +
                             "' --set 'checkpoint.resume=" + run + "/checkpoint.pt'"));
  CHECK(resume_command("runs/b/checkpoint.pt") ==
        "ffcv run runs/b/recipe.toml --output-dir runs/b --set "
        "checkpoint.resume=runs/b/checkpoint.pt");
  // A checkpoint saved without a recipe: nothing to compare with.
  CHECK(resume_differences("", plain).empty());
}

}  // namespace ffcv::train
