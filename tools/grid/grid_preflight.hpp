// What `ffcv run` checks once, before a grid does any work, so that a mistake shared by every
// point is one clear error instead of one failure per point.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ffcv/train/grid.hpp"
#include "ffcv/train/recipe.hpp"

namespace ffcv::tools {

// Refuses (UsageError) a --set override of a key the grid sweeps: the point's own value would
// silently replace it. The message names the key, the grid's values, and --no-grid (the recipe
// as one run) and --point (one point of the grid).
void check_set_not_swept(const std::vector<std::string>& overrides, const train::GridSpec& spec);

// The point index of a cluster job array's task: `text` is $SLURM_ARRAY_TASK_ID. Digits only,
// at most `max_point`; anything else ("-1", "3a", "") is a UsageError naming the variable.
std::size_t array_task_point(const std::string& text, std::size_t max_point);

// Refuses (ConfigError) a data.train or data.val of `recipes` that names a local file which does
// not exist, once for the whole grid. Relative paths are relative to the folder ffcv runs in,
// not to the recipe's: the message says which folder that is, and when the file lies beside the
// recipe instead, says so. URLs are left to the loader.
void check_data_paths(const std::vector<train::Recipe>& recipes, const std::string& recipe_path);

}  // namespace ffcv::tools
