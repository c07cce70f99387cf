// How a grid shares the machine (tools/grid/): each process's cores, how many processes may run
// at once for the GPUs there are and for the memory there is, what is checked once before any
// work, and the table's thread column.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/arguments.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "grid/grid_command.hpp"
#include "grid/grid_memory.hpp"
#include "grid/grid_preflight.hpp"
#include "grid/grid_run.hpp"
#include "grid/grid_table.hpp"
#include "test_support.hpp"

using namespace ffcv;
using namespace ffcv::tools;

TEST_CASE("each process of a grid gets its own contiguous share of the cores", "[grid]") {
  const std::vector<int> four = {0, 1, 2, 3};
  CHECK(slot_cpus(four, 0, 2) == std::vector<int>{0, 1});
  CHECK(slot_cpus(four, 1, 2) == std::vector<int>{2, 3});
  CHECK(slot_cpus({0, 1, 2}, 0, 2) == std::vector<int>{0});
  CHECK(slot_cpus({0, 1, 2}, 1, 2) == std::vector<int>{1, 2});
  // More processes than cores: one core each, in turn.
  CHECK(slot_cpus({4, 5}, 2, 4) == std::vector<int>{4});
  CHECK(slot_cpus({4, 5}, 3, 4) == std::vector<int>{5});
  CHECK(cpu_list_text({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(cpu_list_text(affinity_cpus()) != "");
  CHECK(static_cast<int>(affinity_cpus().size()) == available_cores());
}

TEST_CASE("processes share a GPU only when the grid says so", "[grid]") {
  GridInvocation grid;
  grid.recipe_path = "grid.toml";
  grid.spec.axes = {{"lr.lr", {"0.1", "0.2", "0.4", "0.8"}}};
  grid.points = train::grid_points(grid.spec);
  train::Recipe base;
  grid.spec.placement = "sequential";
  CHECK(resolve_grid_parallel(grid, base) == 1);
  grid.spec.placement = "processes";
  // On the CPU: one process per core, at most one per point.
  CHECK(resolve_grid_parallel(grid, base) == std::min(4, available_cores()));
  grid.gpus = {"0", "1"};
  CHECK(resolve_grid_parallel(grid, base) == 2);  // one per GPU
  grid.spec.parallel = 4;
  CHECK_THROWS_WITH(resolve_grid_parallel(grid, base),
                    Catch::Contains("4 processes but 2 CUDA device(s)") &&
                        Catch::Contains("grid.share_gpus = true"));
  grid.spec.share_gpus = true;
  CHECK(resolve_grid_parallel(grid, base) == 4);
  grid.spec.parallel = 9;
  CHECK(resolve_grid_parallel(grid, base) == 4);  // never more than the points
  grid.spec.placement = "threads";
  grid.spec.parallel = 0;
  CHECK(resolve_grid_parallel(grid, base) == 0);  // every thread at once
  base.dist.world_size = 2;
  CHECK_THROWS_WITH(resolve_grid_parallel(grid, base), Catch::Contains("dist.world_size = 1"));
}

TEST_CASE("a ResNet's parameters are counted as torchvision's models have them", "[grid][memory]") {
  // torchvision's resnet18 and resnet50 (ImageNet stem, 1000 classes): sum(p.numel()).
  train::ModelConfig model;
  CHECK(resnet_parameter_count(model) == 11689512);
  model.arch = "resnet50";
  CHECK(resnet_parameter_count(model) == 25557032);
  // torchvision's resnet18(num_classes=10): 11,181,642. The small stem has a 3x3 first conv.
  model.arch = "resnet18";
  model.num_classes = 10;
  CHECK(resnet_parameter_count(model) == 11181642);
  model.stem = "small";
  CHECK(resnet_parameter_count(model) == 11181642 - 3 * 64 * (49 - 9));
}

TEST_CASE("a grid's memory estimate lowers the points at once to what fits, or refuses",
          "[grid][memory]") {
  train::Recipe recipe;  // ResNet-18, batch 512 at 160 px, validation 512 at 256 px
  const PointMemory point = estimate_point_memory(recipe, false);
  CHECK(point.model == 16.0 * 11689512);
  // The training step dominates: batch x (3 conv outputs x 4 bytes + the input).
  CHECK(point.activations > 512.0 * 3 * 4 * 64 * 80 * 80);
  CHECK(point.loader == 5.0 * (512.0 * 3 * 160 * 160 + 512.0 * 3 * 256 * 256));
  // On the GPU the model and activations are not the host's.
  CHECK(estimate_point_memory(recipe, true).host_model_bytes() == 0);
  recipe.training.precision = "bf16";
  CHECK(estimate_point_memory(recipe, false).activations < point.activations);

  const double one = point.host_model_bytes() + point.loader;
  const std::vector<PointMemory> eight(8, point);
  const double plenty = 1e15;
  // Enough memory: as asked.
  GridMemoryPlan plan = plan_grid_memory("processes", 8, eight, {}, plenty);
  CHECK(plan.fits);
  CHECK(plan.at_once == 8);
  CHECK(plan.needed == Approx(8 * (one + kProcessBytes)));
  // Room for three processes: three at once, the others wait.
  plan = plan_grid_memory("processes", 8, eight, {}, 3.5 * (one + kProcessBytes));
  CHECK(plan.fits);
  CHECK(plan.at_once == 3);
  CHECK(plan.requested == Approx(8 * (one + kProcessBytes)));
  // Threads: one process for all.
  plan = plan_grid_memory("threads", 0, eight, {}, kProcessBytes + 5.5 * one);
  CHECK(plan.at_once == 5);
  // Sequential needs one point's worth.
  plan = plan_grid_memory("sequential", 8, eight, {}, kProcessBytes + 1.01 * one);
  CHECK(plan.fits);
  CHECK(plan.at_once == 1);
  // Not even one point: refused.
  plan = plan_grid_memory("sequential", 1, eight, {}, one);
  CHECK_FALSE(plan.fits);
  CHECK(plan.needed == Approx(kProcessBytes + one));

  // Shared: 10,000 points of one group would build 10,000 models; the group trains in turns of
  // as many models as fit beside one loader.
  const std::vector<PointMemory> many(10000, point);
  std::vector<std::vector<std::size_t>> one_group(1);
  for (std::size_t i = 0; i < many.size(); ++i) one_group[0].push_back(i);
  const double available = kProcessBytes + point.loader + 40.5 * point.host_model_bytes();
  plan = plan_grid_memory("shared", 0, many, one_group, available);
  CHECK(plan.fits);
  CHECK(plan.at_once == 1);
  CHECK(plan.models_per_group == 40);
  CHECK(plan.needed <= available);
  CHECK(plan.requested > 200 * available);  // 10,000 models against about 40
  // Two groups that each fit, but not together: one group at a time, each whole.
  std::vector<std::vector<std::size_t>> two_groups(2);
  for (std::size_t i = 0; i < 60; ++i) two_groups[i % 2].push_back(i);
  plan = plan_grid_memory("shared", 0, std::vector<PointMemory>(60, point), two_groups, available);
  CHECK(plan.at_once == 1);
  CHECK(plan.models_per_group == 0);
}

TEST_CASE("a --set of a swept key, and a job array task that is no index, are refused", "[grid]") {
  train::GridSpec spec;
  spec.axes = {{"lr.lr", {"0.1", "0.2"}}};
  CHECK_NOTHROW(check_set_not_swept({"training.epochs=2", "lr.peak_epoch=1"}, spec));
  CHECK_THROWS_WITH(check_set_not_swept({"training.epochs=2", "lr.lr=0.5"}, spec),
                    Catch::StartsWith("--set lr.lr=0.5: the grid sweeps lr.lr (0.1, 0.2)") &&
                        Catch::Contains("--no-grid"));
  spec.axes.clear();
  spec.listed = {{{"data.seed", "1"}}};
  CHECK_THROWS_AS(check_set_not_swept({"data.seed=3"}, spec), UsageError);

  CHECK(array_task_point("0", 100) == 0);
  CHECK(array_task_point("17", 100) == 17);
  for (const std::string bad : {"-1", "", "3a", "+3", "101", "18446744073709551615"}) {
    CHECK_THROWS_WITH(array_task_point(bad, 100), Catch::StartsWith("SLURM_ARRAY_TASK_ID=\"" + bad +
                                                                    "\" is not a point index"));
  }
}

TEST_CASE("a grid's data paths are checked once, saying what relative paths are relative to",
          "[grid]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.file("repo/recipes/many"));
  std::filesystem::create_directories(dir.file("repo/data"));
  std::ofstream(dir.file("repo/data/train.beton")) << "x";
  const std::string recipe_path = dir.file("repo/recipes/many/grid.toml");
  train::Recipe recipe;
  recipe.data.train = dir.file("repo/data/train.beton");
  recipe.data.val = "https://example.com/val.beton";  // URLs are the loader's to check
  CHECK_NOTHROW(check_data_paths({recipe}, recipe_path));
  // A path relative to the repository, from a folder elsewhere: the message names both folders.
  recipe.data.train = "data/train.beton";
  const std::string cwd = std::filesystem::current_path().string();
  CHECK_THROWS_WITH(check_data_paths({recipe}, recipe_path),
                    Catch::Contains("data.train = \"data/train.beton\": no such file") &&
                        Catch::Contains("relative to the folder ffcv runs in (" + cwd + ")") &&
                        Catch::Contains("it is in " + dir.file("repo")) &&
                        Catch::Contains("checked once"));
  recipe.data.train = dir.file("repo/data/train.beton");
  recipe.data.val = dir.file("nowhere/val.beton");
  CHECK_THROWS_WITH(check_data_paths({recipe}, recipe_path),
                    Catch::Contains("data.val") && !Catch::Contains("relative"));
}

TEST_CASE("the grid table shows the intra-op threads each point trained with", "[grid]") {
  test::TempDir dir;
  train::GridSpec spec;
  spec.axes = {{"lr.lr", {"0.1", "0.2"}}};
  const std::vector<train::GridPoint> points = train::grid_points(spec);
  std::filesystem::create_directories(dir.file("point-000"));
  std::ofstream(dir.file("point-000/recipe.toml")) << "";  // a run that started
  // A start record, then a resumed start with other threads: the last one counts.
  std::ofstream(dir.file("point-000/log.jsonl"))
      << "{\"event\": \"start\", \"threads\": 2, \"cpus\": \"0-1\"}\n"
      << "{\"event\": \"epoch\", \"threads\": 9}\n"
      << "{\"event\": \"start\", \"threads\": 3, \"cpus\": \"0-1\"}\n";
  CHECK(logged_threads(dir.file("point-000")) == 3);
  CHECK(logged_threads(dir.file("point-001")) == 0);
  write_grid_tables(dir.path(), {"lr.lr"}, gather_grid(dir.path(), points), "ffcv run grid.toml");
  const std::string md = test::text_of(dir.file("grid.md"));
  CHECK_THAT(md, Catch::Contains("| point | lr.lr | state | threads |"));
  CHECK_THAT(md, Catch::Contains("| 0 | 0.1 | started | 3 |"));
  CHECK_THAT(md, Catch::Contains("| 1 | 0.2 | none |  |"));
  CHECK_THAT(test::text_of(dir.file("grid.csv")),
             Catch::Contains("loader_wait_share,threads,error"));
  CHECK_THAT(test::text_of(dir.file("grid.json")), Catch::Contains("\"threads\": 3"));
}
