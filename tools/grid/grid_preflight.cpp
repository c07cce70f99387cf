#include "grid/grid_preflight.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/arguments.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {

namespace fs = std::filesystem;

void check_set_not_swept(const std::vector<std::string>& overrides, const train::GridSpec& spec) {
  const std::vector<std::string> swept = train::grid_keys(spec);
  for (const std::string& text : overrides) {
    const std::string key = text.substr(0, text.find('='));
    if (std::find(swept.begin(), swept.end(), key) == swept.end()) continue;
    std::string values;
    for (const train::GridAxis& axis : spec.axes) {
      if (axis.key != key) continue;
      for (const std::string& value : axis.values) values += (values.empty() ? "" : ", ") + value;
    }
    throw UsageError("--set " + text + ": the grid sweeps " + key +
                     (values.empty() ? "" : " (" + values + ")") +
                     ", so each point's value would replace it; drop the --set, change the "
                     "grid's values (--grid " +
                     key + "=...), or run the recipe as one run with --no-grid");
  }
}

std::size_t array_task_point(const std::string& text, std::size_t max_point) {
  const bool digits =
      !text.empty() && text.size() <= 18 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoull(text) > max_point) {
    throw UsageError("SLURM_ARRAY_TASK_ID=\"" + text + "\" is not a point index (0 to " +
                     std::to_string(max_point) + "); unset it, or give --point I");
  }
  return static_cast<std::size_t>(std::stoull(text));
}

void check_data_paths(const std::vector<train::Recipe>& recipes, const std::string& recipe_path) {
  std::set<std::pair<std::string, std::string>> checked;
  for (const train::Recipe& recipe : recipes) {
    for (const auto& [key, path] :
         {std::pair<std::string, std::string>{"data.train", recipe.data.train},
          {"data.val", recipe.data.val}}) {
      if (path.empty() || !checked.insert({key, path}).second) continue;
      if (!local_file_missing(path)) continue;
      std::error_code error;
      std::string message = recipe_path + ": " + key + " = \"" + path + "\": no such file";
      if (fs::path(path).is_relative()) {
        message += "; relative paths are relative to the folder ffcv runs in (" +
                   fs::current_path(error).string() + "), not to the recipe's";
        // The folder the recipe expects: its own, or one above it (the repository's, for the
        // shipped recipes), where the path names a file.
        fs::path base;
        for (fs::path folder = fs::absolute(recipe_path, error).parent_path(); !folder.empty();
             folder = folder.parent_path()) {
          if (fs::exists(folder / path, error)) {
            base = folder;
            break;
          }
          if (folder == folder.root_path()) break;
        }
        if (!base.empty()) {
          message += "; it is in " + base.string() + ": run from there, or give --set " + key +
                     "=" + (base / path).string();
        } else {
          message +=
              ": run from the folder the recipe expects, or give --set " + key + "=/absolute/path";
        }
      }
      throw ConfigError(message + " (checked once for every point of the grid)");
    }
  }
}

}  // namespace ffcv::tools
