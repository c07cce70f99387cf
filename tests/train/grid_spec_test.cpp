// Grids of runs (ffcv/train/grid.hpp): the [grid] section and --grid axes, the points they make,
// and the errors of a grid that cannot run.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ffcv/train/grid.hpp"
#include "ffcv/train/recipe.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

namespace ffcv::train {
namespace {

using ffcv::test::TempDir;

const char* const kRecipe = "[data]\ntrain = \"t.beton\"\nval = \"v.beton\"\n";

std::string write_grid_recipe(const TempDir& dir, const std::string& grid) {
  const std::string path = dir.file("recipe.toml");
  std::ofstream(path) << grid << "\n" << kRecipe;
  return path;
}

// The ConfigError message of loading the grid, or "" when it loads.
std::string grid_error(const std::string& grid, const std::vector<std::string>& cli = {},
                       const std::string& placement = "") {
  TempDir dir;
  try {
    load_grid(write_grid_recipe(dir, grid), cli, placement);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a grid's axes make every combination, the first axis varying slowest", "[grid]") {
  TempDir dir;
  const std::string path = write_grid_recipe(dir,
                                             "[grid]\nplacement = \"shared\"\nparallel = 2\n"
                                             "training.label_smoothing = [0.0, 0.1]\n"
                                             "lr.lr = [0.25, 0.5, 1]\n");
  const GridSpec spec = load_grid(path, {});
  CHECK(spec.placement == "shared");
  CHECK(spec.parallel == 2);
  const std::vector<GridPoint> points = grid_points(spec);
  REQUIRE(points.size() == 6);
  // The axes keep the file's order, although TOML tables iterate sorted by key.
  CHECK(grid_keys(spec) == std::vector<std::string>{"training.label_smoothing", "lr.lr"});
  CHECK(points[0].overrides ==
        std::vector<std::string>{"training.label_smoothing=0.0", "lr.lr=0.25"});
  CHECK(points[2].overrides == std::vector<std::string>{"training.label_smoothing=0.0", "lr.lr=1"});
  CHECK(points[3].overrides ==
        std::vector<std::string>{"training.label_smoothing=0.1", "lr.lr=0.25"});
  CHECK(points[5].label == "training.label_smoothing=0.1 lr.lr=1");
  CHECK(points[5].folder == "point-005");
  for (std::size_t i = 0; i < points.size(); ++i) CHECK(points[i].index == i);

  // The command line adds an axis, replaces one of the file's, and sets the placement.
  const GridSpec cli =
      load_grid(path, {"lr.lr=0.1,0.2", "augment.scale=[0.08,1],[0.35,1]"}, "threads", 0);
  CHECK(cli.placement == "threads");
  CHECK(cli.parallel == 0);
  REQUIRE(cli.axes.size() == 3);
  CHECK(cli.axes[1].values == std::vector<std::string>{"0.1", "0.2"});
  CHECK(cli.axes[2].values == std::vector<std::string>{"[0.08,1]", "[0.35,1]"});
  CHECK(grid_points(cli).size() == 8);

  // One point alone (a point's process) is the same point, without making the others.
  CHECK(grid_point_count(cli) == 8);
  const std::vector<GridPoint> all = grid_points(cli);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const GridPoint one = grid_point(cli, i);
    CHECK(one.index == i);
    CHECK(one.overrides == all[i].overrides);
    CHECK(one.label == all[i].label);
    CHECK(one.folder == all[i].folder);
  }
  CHECK_THROWS_AS(grid_point(cli, 8), std::out_of_range);
}

TEST_CASE("a grid can list its points instead", "[grid]") {
  TempDir dir;
  const GridSpec spec =
      load_grid(write_grid_recipe(
                    dir, "[grid]\npoints = [{ lr.lr = 0.25, data.seed = 0 }, { lr.lr = 0.5 }]\n"),
                {});
  const std::vector<GridPoint> points = grid_points(spec);
  REQUIRE(points.size() == 2);
  CHECK(points[0].overrides == std::vector<std::string>{"data.seed=0", "lr.lr=0.25"});
  CHECK(points[1].overrides == std::vector<std::string>{"lr.lr=0.5"});
  CHECK(grid_keys(spec) == std::vector<std::string>{"data.seed", "lr.lr"});
  CHECK(grid_point_count(spec) == 2);
  CHECK(grid_point(spec, 1).overrides == points[1].overrides);
  CHECK(grid_point(spec, 1).folder == "point-001");
  // A recipe without a grid has no points.
  CHECK(load_grid(write_grid_recipe(dir, ""), {}).empty());
  CHECK(grid_point_count(load_grid(write_grid_recipe(dir, ""), {})) == 0);
}

TEST_CASE("values split at commas outside brackets and quotes", "[grid]") {
  CHECK(split_grid_values("1,2") == std::vector<std::string>{"1", "2"});
  CHECK(split_grid_values("[1,2],\"a,b\",'c'") ==
        std::vector<std::string>{"[1,2]", "\"a,b\"", "'c'"});
  CHECK(split_grid_values("x") == std::vector<std::string>{"x"});
}

TEST_CASE("a grid that cannot run is refused before any work, naming what is wrong", "[grid]") {
  CHECK_THAT(grid_error("[grid]\nlr.lrr = [1, 2]\n"),
             Catch::Contains("'lr.lrr' is not a recipe key") && Catch::Contains("lr.lr"));
  CHECK_THAT(grid_error("[grid]\nlr.lr = 0.5\n"), Catch::Contains("non-empty list of values"));
  CHECK_THAT(grid_error("[grid]\nlr.lr = []\n"), Catch::Contains("non-empty list of values"));
  CHECK_THAT(grid_error("[grid]\ncheckpoint.resume = [\"a\", \"b\"]\n"),
             Catch::Contains("cannot be swept"));
  CHECK_THAT(grid_error("[grid]\ndist.world_size = [1, 2]\n"), Catch::Contains("cannot be swept"));
  CHECK_THAT(grid_error("[grid]\nplacement = \"thread\"\nlr.lr = [1]\n"),
             Catch::Contains("sequential, processes, threads or shared") &&
                 Catch::Contains("did you mean threads"));
  CHECK_THAT(grid_error("[grid]\nparalel = 2\n"),
             Catch::Contains("unknown grid setting 'paralel'") &&
                 Catch::Contains("did you mean parallel"));
  CHECK_THAT(grid_error("[grid]\nparallel = -1\n"), Catch::Contains("[0, 4096]"));
  CHECK_THAT(grid_error("[grid]\nforward_lock = 1\n"), Catch::Contains("true or false"));
  CHECK_THAT(grid_error("[grid]\nlr.lr = [1, 2]\npoints = [{ lr.lr = 3 }]\n"),
             Catch::Contains("not both"));
  CHECK_THAT(grid_error("[grid]\npoints = [1]\n"), Catch::Contains("table of recipe keys"));
  CHECK_THAT(grid_error("", {"lr.lr"}), Catch::Contains("expected section.key=value1"));
  CHECK_THAT(grid_error("", {"lr.lr=1,,2"}), Catch::Contains("an empty value"));
  CHECK_THAT(grid_error("", {"lr.rate=1"}), Catch::Contains("not a recipe key"));
  CHECK_THAT(grid_error("", {}, "everywhere"), Catch::Contains("--placement must be"));
  CHECK_THAT(grid_error("grid = 3\n"), Catch::Contains("'grid' must be a table"));
  CHECK_THAT(grid_error("[grid]\nshare_seeds = true\nlr.lr = [1]\n", {}, "threads"),
             Catch::Contains("only the shared placement"));
  CHECK(grid_error("[grid]\nshare_seeds = true\nlr.lr = [1]\n", {}, "shared").empty());
  CHECK(grid_error("[grid]\nlr.lr = [1, 2]\n", {"lr.lr=3"}).empty());
}

TEST_CASE("a bad --grid or --placement value blames the option, not the recipe file", "[grid]") {
  TempDir dir;
  const std::string path = write_grid_recipe(dir, "[grid]\nlr.lr = [1, 2]\n");
  // The message of the GridOptionError, or "" when another error or none was thrown.
  const auto option_error = [&](const std::vector<std::string>& cli,
                                const std::string& placement = "") -> std::string {
    try {
      load_grid(path, cli, placement);
    } catch (const GridOptionError& error) {
      return error.what();
    } catch (const ConfigError&) {
      return "";
    }
    return "";
  };
  CHECK_THAT(option_error({"lr.lr="}), Catch::StartsWith("--grid lr.lr=: an empty value"));
  CHECK_THAT(option_error({"lr.lr"}), Catch::StartsWith("--grid lr.lr: expected section.key="));
  CHECK_THAT(option_error({"=1,2"}), Catch::StartsWith("--grid =1,2: expected"));
  CHECK_THAT(option_error({"lr.rate=1"}),
             Catch::StartsWith("--grid lr.rate=1: 'lr.rate' is not a recipe key"));
  CHECK_THAT(option_error({"dist.world_size=1,2"}), Catch::Contains("cannot be swept"));
  // The same key twice is refused rather than the first one dropped.
  CHECK_THAT(option_error({"lr.lr=1,2", "data.seed=0", "lr.lr=3"}),
             Catch::StartsWith("--grid lr.lr=3: lr.lr is given by two --grid options"));
  CHECK_THAT(option_error({}, "bogus"),
             Catch::StartsWith("--placement must be sequential, processes, threads or shared") &&
                 Catch::Contains("\"bogus\"") && !Catch::Contains(path));
  // Found before the file is read: a recipe that does not exist is not the first complaint.
  CHECK_THROWS_AS(load_grid(dir.file("missing.toml"), {"lr.lr="}), GridOptionError);
  // --grid still replaces the file's axis of that key.
  const GridSpec replaced = load_grid(path, {"lr.lr=3,4,5"});
  REQUIRE(replaced.axes.size() == 1);
  CHECK(replaced.axes[0].values == std::vector<std::string>{"3", "4", "5"});
  // The file's own mistakes still name the file, and are not option errors.
  const std::string bad = write_grid_recipe(dir, "[grid]\nplacement = \"bogus\"\nlr.lr = [1]\n");
  try {
    load_grid(bad, {});
    FAIL("a bad grid.placement loaded");
  } catch (const GridOptionError&) {
    FAIL("the file's grid.placement was blamed on --placement");
  } catch (const ConfigError& error) {
    CHECK_THAT(error.what(), Catch::StartsWith(bad + ": grid.placement must be"));
  }
}

}  // namespace ffcv::train

namespace ffcv::train {

TEST_CASE("every grid recipe in recipes/many_models loads, and so does each of its points",
          "[grid][recipe]") {
  const std::filesystem::path root =
      std::filesystem::path(FFCV_SOURCE_DIR) / "recipes" / "many_models";
  std::size_t grids = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().extension() != ".toml") continue;
    const std::string file = entry.path().string();
    INFO(file);
    const GridSpec spec = load_grid(file, {});
    CHECK_FALSE(spec.empty());
    for (const GridPoint& point : grid_points(spec)) {
      INFO(point.label);
      CHECK_NOTHROW(load_recipe(file, point.overrides));
    }
    ++grids;
  }
  CHECK(grids >= 3);
}

}  // namespace ffcv::train
