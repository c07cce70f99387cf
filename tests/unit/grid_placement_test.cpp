// How a grid shares the machine (tools/grid/): each process's cores, how many processes may run
// at once for the GPUs there are and for the memory there is, what is checked once before any
// work, and the table's thread column.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>

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
  CHECK(point.setup == kPointSetUpBytes);
  // On the GPU the model and activations are not the host's; the point's set-up is: at least the
  // 20 MiB the smallest point measured beyond its model, activations and batches.
  CHECK(estimate_point_memory(recipe, true).host_model_bytes() == kPointSetUpBytes);
  CHECK(kPointSetUpBytes >= 20.0 * (1 << 20));
  recipe.training.precision = "bf16";
  CHECK(estimate_point_memory(recipe, false).activations < point.activations);
  // The loaders' tables grow with the data files' samples: at least an allocation entry (24
  // bytes), a page (8) and a place in the order (8) for each.
  const double imagenet = estimate_point_memory(recipe, false, {1'281'167, 50'000}).loader;
  CHECK(imagenet == Approx(point.loader + kTableBytesPerSample * 1'331'167));
  CHECK(imagenet - point.loader >= 40.0 * 1'331'167);

  const double one = point.host_model_bytes() + point.loader;
  const std::vector<PointMemory> eight(8, point);
  const double plenty = 1e15;
  // The plan fills a share of the memory available: `available(b)` is the memory available
  // whose budget is b.
  const auto available = [](double budget) { return budget / kGridMemoryFraction; };
  // Enough memory and cores: as asked.
  GridMemoryPlan plan = plan_grid_memory("processes", 8, eight, {}, plenty, 8);
  CHECK(plan.fits);
  CHECK(plan.at_once == 8);
  CHECK(plan.needed == Approx(8 * (one + kProcessBytes)));
  CHECK(plan.budget == Approx(kGridMemoryFraction * plenty));
  // Room in the budget for three processes: three at once, the others wait.
  plan = plan_grid_memory("processes", 8, eight, {}, available(3.5 * (one + kProcessBytes)), 8);
  CHECK(plan.fits);
  CHECK(plan.by_memory);
  CHECK(plan.at_once == 3);
  CHECK(plan.requested == Approx(8 * (one + kProcessBytes)));
  // The same memory with all of it planned for would have run four: the budget keeps a share.
  plan = plan_grid_memory("processes", 8, eight, {}, 4.5 * (one + kProcessBytes), 8);
  CHECK(plan.at_once == 3);
  // Threads: one process for all.
  plan = plan_grid_memory("threads", 0, eight, {}, available(kProcessBytes + 5.5 * one), 8);
  CHECK(plan.at_once == 5);
  // Sequential needs one point's worth.
  plan = plan_grid_memory("sequential", 8, eight, {}, available(kProcessBytes + 1.01 * one), 8);
  CHECK(plan.fits);
  CHECK(plan.at_once == 1);
  // One point at a time runs when it fits the memory available, beyond the budget too.
  plan = plan_grid_memory("sequential", 1, eight, {}, 1.01 * (kProcessBytes + one), 8);
  CHECK(plan.fits);
  CHECK(plan.at_once == 1);
  // Not even one point: refused.
  plan = plan_grid_memory("sequential", 1, eight, {}, one, 8);
  CHECK_FALSE(plan.fits);
  CHECK(plan.needed == Approx(kProcessBytes + one));

  // Shared: 10,000 points of one group would build 10,000 models; the group trains in turns of
  // as many models as fit beside one loader.
  const std::vector<PointMemory> many(10000, point);
  std::vector<std::vector<std::size_t>> one_group(1);
  for (std::size_t i = 0; i < many.size(); ++i) one_group[0].push_back(i);
  const double budget = kProcessBytes + point.loader + 40.5 * point.host_model_bytes();
  plan = plan_grid_memory("shared", 0, many, one_group, available(budget), 8);
  CHECK(plan.fits);
  CHECK(plan.at_once == 1);
  CHECK(plan.models_per_group == 40);
  CHECK(plan.needed <= budget);
  CHECK(plan.requested > 200 * budget);  // 10,000 models against about 40
  // Two groups that each fit, but not together: one group at a time, each whole.
  std::vector<std::vector<std::size_t>> two_groups(2);
  for (std::size_t i = 0; i < 60; ++i) two_groups[i % 2].push_back(i);
  plan = plan_grid_memory("shared", 0, std::vector<PointMemory>(60, point), two_groups,
                          available(budget), 8);
  CHECK(plan.at_once == 1);
  CHECK(plan.models_per_group == 0);
}

TEST_CASE("a grid runs at most one point per core at once unless grid.parallel asks for more",
          "[grid][memory]") {
  // Small points, plenty of memory: 1,000 threads would all fit, but not on 2 cores.
  train::Recipe recipe;
  recipe.model.width = 0.125;
  recipe.model.num_classes = 10;
  recipe.training.batch_size = 256;
  recipe.resolution.min_res = recipe.resolution.max_res = 32;
  recipe.validation.resolution = 32;
  const PointMemory point = estimate_point_memory(recipe, false, {60'000, 10'000});
  const std::vector<PointMemory> thousand(1000, point);
  const double memory = 16e9;  // what the machine had available
  GridMemoryPlan plan = plan_grid_memory("threads", 0, thousand, {}, memory, 2);
  CHECK(plan.at_once == 2);
  CHECK(plan.by_cores);
  CHECK_FALSE(plan.by_memory);
  CHECK(plan.needed <= kGridMemoryFraction * memory);
  // A shared grid's groups likewise; a processes grid's default is resolved per core before
  // the plan (resolve_grid_parallel), as its processes are pinned.
  std::vector<std::vector<std::size_t>> groups(100);
  for (std::size_t i = 0; i < thousand.size(); ++i) groups[i % 100].push_back(i);
  plan = plan_grid_memory("shared", 0, thousand, groups, memory, 2);
  CHECK(plan.at_once == 2);
  CHECK(plan.units == 100);
  CHECK(plan.by_cores);
  CHECK(plan.models_per_group == 0);
  // Fewer units than cores: every one at once.
  plan = plan_grid_memory("threads", 0, std::vector<PointMemory>(3, point), {}, memory, 8);
  CHECK(plan.at_once == 3);
  CHECK_FALSE(plan.by_cores);
  // grid.parallel asks for more: as asked, the memory permitting.
  plan = plan_grid_memory("threads", 16, thousand, {}, memory, 2);
  CHECK(plan.at_once == 16);
  CHECK_FALSE(plan.by_cores);
  // And the memory, when it is the tighter limit: a budget for six and a half of these.
  const double each = point.host_model_bytes() + point.loader;
  plan = plan_grid_memory("threads", 16, thousand, {},
                          (kProcessBytes + 6.5 * each) / kGridMemoryFraction, 2);
  CHECK(plan.at_once == 6);
  CHECK(plan.by_memory);

  // The line the grid prints says what limited it and the share of memory it plans within.
  plan = plan_grid_memory("threads", 0, thousand, {}, memory, 2);
  const std::string line = grid_plan_line(plan, "threads");
  CHECK_THAT(line, Catch::StartsWith("grid: plan: 2 of 1000 points at once (at most one per "
                                     "core: 2)") &&
                       Catch::Contains("75% of the 14.9 GiB available") &&
                       Catch::Contains("page cache"));
  plan = plan_grid_memory("threads", 0, thousand, {}, std::numeric_limits<double>::infinity(), 2);
  CHECK(plan.at_once == 2);
  CHECK_THAT(grid_plan_line(plan, "threads"), Catch::EndsWith("the memory available is not known"));
}

TEST_CASE("ffcv run starts a large threads grid at most one point per core at once",
          "[grid][memory][cli]") {
  if (!std::filesystem::exists(std::filesystem::path(FFCV_CLI_PATH).parent_path() / "ffcv-train")) {
    return test::skip_test("a build without LibTorch has no `ffcv run`");
  }
  // 64 small points, which would all fit in memory; their data files are no datasets (the
  // recipe stands in for them), so each point fails as soon as its loader opens them.
  test::TempDir dir;
  const std::string recipe = dir.file("grid.toml");
  std::ofstream(recipe) << "[data]\ntrain = \"" << recipe << "\"\nval = \"" << recipe
                        << "\"\n[model]\nnum_classes = 10\nwidth = 0.125\n"
                        << "[training]\nbatch_size = 32\n[resolution]\nmin_res = 32\n"
                        << "max_res = 32\n[validation]\nresolution = 32\nbatch_size = 32\n"
                        << "[grid]\nplacement = \"threads\"\n";
  std::string values;
  for (int i = 1; i <= 64; ++i) values += (i > 1 ? "," : "") + std::to_string(0.001 * i);
  std::string output;
  CHECK(test::run_cli(
            "run " + recipe + " --grid lr.lr=" + values + " --output-dir " + dir.file("out"),
            output) == 1);
  INFO(output);
  const int cores = available_cores();
  const int at_once = std::min(64, cores);
  // The plan, then the threads the grid starts.
  CHECK_THAT(output,
             Catch::Contains("grid: plan: " + std::to_string(at_once) + " of 64 points at once") &&
                 Catch::Contains("75% of the"));
  CHECK_THAT(output, Catch::Contains("grid: 64 points, threads in this process, " +
                                     std::to_string(at_once) + " at once"));
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
