// How a grid's `processes` placement shares the machine (tools/grid/): each process's cores, and
// how many processes may run at once for the GPUs there are.
#include <catch2/catch.hpp>

#include "ffcv/cpu_count.hpp"
#include "ffcv/errors.hpp"
#include "grid/grid_command.hpp"
#include "grid/grid_run.hpp"

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
