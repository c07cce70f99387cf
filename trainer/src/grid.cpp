#include "ffcv/train/grid.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "ffcv/train/recipe.hpp"
#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"

namespace ffcv::train {
namespace {

// Keys the grid itself decides for every point.
const std::vector<std::string> kReservedKeys = {"dist.world_size", "checkpoint.resume",
                                                "logging.folder"};

std::string where(const std::string& path, const toml::node& node) {
  const toml::source_position& at = node.source().begin;
  return path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

// A TOML value as the text `--set` takes: strings as they are, the rest as TOML writes them.
std::string value_text(const toml::node& node, const std::string& site) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) return json_float(f->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* array = node.as_array()) {
    std::string text = "[";
    for (std::size_t k = 0; k < array->size(); ++k) {
      const toml::node& element = *array->get(k);
      text += k ? ", " : "";
      text +=
          element.is_string() ? json_quote(element.as_string()->get()) : value_text(element, site);
    }
    return text + "]";
  }
  throw ConfigError(site + ": a grid value must be a string, number, boolean or array");
}

void check_key(const std::string& key, const std::string& site) {
  const std::vector<std::string> keys = recipe_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    const std::string best = closest_name(key, keys, 4);
    throw ConfigError(site + ": '" + key + "' is not a recipe key" +
                      (best.empty() ? "" : " (did you mean " + best + "?)"));
  }
  if (std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end()) {
    throw ConfigError(site + ": " + key +
                      " cannot be swept: the grid sets it for each point (each point is one "
                      "process with its own run folder, resumed from its own checkpoint)");
  }
}

// Calls visit(key, node, site) for every leaf of a table of recipe keys, written either nested
// (`lr.lr = ...` is the table lr holding lr) or quoted (`"lr.lr" = ...`).
template <typename Visit>
void for_each_leaf(const toml::table& table, const std::string& prefix, const std::string& path,
                   Visit&& visit) {
  for (const auto& [name, node] : table) {
    const std::string key =
        prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const auto* nested = node.as_table()) {
      for_each_leaf(*nested, key, path, visit);
    } else {
      visit(key, node, where(path, node));
    }
  }
}

void add_axis(GridSpec& spec, GridAxis axis) {
  for (GridAxis& existing : spec.axes) {
    if (existing.key == axis.key) {
      existing.values = std::move(axis.values);
      return;
    }
  }
  spec.axes.push_back(std::move(axis));
}

// The axes in the order the file writes them (TOML tables iterate in key order).
void order_as_written(std::vector<GridAxis>& axes, std::vector<toml::source_position>& written) {
  std::vector<std::size_t> order(axes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return written[a].line != written[b].line ? written[a].line < written[b].line
                                              : written[a].column < written[b].column;
  });
  std::vector<GridAxis> sorted;
  for (const std::size_t i : order) sorted.push_back(std::move(axes[i]));
  axes = std::move(sorted);
}

// grid.points: a non-empty list of tables of recipe keys, each one point.
void read_listed_points(const toml::node& node, const std::string& site, const std::string& path,
                        GridSpec& spec) {
  const toml::array* points = node.as_array();
  if (points == nullptr || points->empty()) {
    throw ConfigError(site + ": grid.points must be a non-empty list of tables");
  }
  for (const toml::node& point_node : *points) {
    const toml::table* point = point_node.as_table();
    if (point == nullptr) {
      throw ConfigError(where(path, point_node) +
                        ": each of grid.points is a table of recipe keys, e.g. "
                        "{ lr.lr = 0.5, data.seed = 1 }");
    }
    std::vector<std::pair<std::string, std::string>> values;
    for_each_leaf(*point, "", path,
                  [&](const std::string& leaf, const toml::node& value, const std::string& at) {
                    check_key(leaf, at);
                    values.emplace_back(leaf, value_text(value, at));
                  });
    if (values.empty()) throw ConfigError(where(path, point_node) + ": an empty grid point");
    spec.listed.push_back(std::move(values));
  }
}

void read_grid_table(const toml::table& grid, const std::string& path, GridSpec& spec) {
  std::vector<toml::source_position> written;  // where each axis of spec.axes was written
  for (const auto& [name, node] : grid) {
    const std::string key(name.str());
    const std::string site = where(path, node);
    if (key == "placement") {
      if (!node.is_string()) throw ConfigError(site + ": grid.placement must be a string");
      spec.placement = node.as_string()->get();
    } else if (key == "parallel") {
      if (!node.is_integer() || node.as_integer()->get() < 0 || node.as_integer()->get() > 4096) {
        throw ConfigError(site + ": grid.parallel must be an integer in [0, 4096]");
      }
      spec.parallel = static_cast<int>(node.as_integer()->get());
    } else if (key == "share_seeds") {
      if (!node.is_boolean()) throw ConfigError(site + ": grid.share_seeds must be true or false");
      spec.share_seeds = node.as_boolean()->get();
    } else if (key == "forward_lock") {
      if (!node.is_boolean()) throw ConfigError(site + ": grid.forward_lock must be true or false");
      spec.forward_lock = node.as_boolean()->get();
    } else if (key == "share_gpus") {
      if (!node.is_boolean()) throw ConfigError(site + ": grid.share_gpus must be true or false");
      spec.share_gpus = node.as_boolean()->get();
    } else if (key == "points") {
      read_listed_points(node, site, path, spec);
    } else if (const toml::table* section = node.as_table()) {
      for_each_leaf(*section, key, path,
                    [&](const std::string& leaf, const toml::node& value, const std::string& at) {
                      check_key(leaf, at);
                      const toml::array* values = value.as_array();
                      if (values == nullptr || values->empty()) {
                        throw ConfigError(at + ": the grid axis " + leaf +
                                          " must be a non-empty list of values, e.g. " + leaf +
                                          " = [1, 2]");
                      }
                      GridAxis axis{leaf, {}};
                      for (const toml::node& v : *values) axis.values.push_back(value_text(v, at));
                      spec.axes.push_back(std::move(axis));
                      written.push_back(value.source().begin);
                    });
    } else if (key.find('.') != std::string::npos) {
      // A quoted "section.key" axis.
      check_key(key, site);
      const toml::array* values = node.as_array();
      if (values == nullptr || values->empty()) {
        throw ConfigError(site + ": the grid axis " + key + " must be a non-empty list of values");
      }
      GridAxis axis{key, {}};
      for (const toml::node& v : *values) axis.values.push_back(value_text(v, site));
      spec.axes.push_back(std::move(axis));
      written.push_back(node.source().begin);
    } else {
      const std::string best = closest_name(
          key, {"placement", "parallel", "share_gpus", "forward_lock", "share_seeds", "points"}, 3);
      throw ConfigError(site + ": unknown grid setting '" + key + "'" +
                        (best.empty() ? "" : " (did you mean " + best + "?)") +
                        "; an axis is a recipe key with its section, e.g. lr.lr = [0.1, 0.2]");
    }
  }
  order_as_written(spec.axes, written);
  for (std::size_t i = 0; i + 1 < spec.axes.size(); ++i) {
    if (spec.axes[i].key == spec.axes[i + 1].key) {
      throw ConfigError(path + ": the grid axis " + spec.axes[i].key + " is given twice");
    }
  }
}

}  // namespace

const std::vector<std::string>& grid_placements() {
  static const std::vector<std::string> kPlacements = {"sequential", "processes", "threads",
                                                       "shared"};
  return kPlacements;
}

std::vector<std::string> split_grid_values(const std::string& text) {
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (const char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      values.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  values.push_back(current);
  return values;
}

namespace {

// The command line's axes, checked before the recipe file is read: each error names the option.
std::vector<GridAxis> cli_grid_axes(const std::vector<std::string>& cli_axes) {
  std::vector<GridAxis> axes;
  for (const std::string& text : cli_axes) {
    const std::string site = "--grid " + text;
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw GridOptionError(site + ": expected section.key=value1,value2,...");
    }
    GridAxis axis{text.substr(0, equals), split_grid_values(text.substr(equals + 1))};
    try {
      check_key(axis.key, site);
    } catch (const ConfigError& error) {
      throw GridOptionError(error.what());
    }
    for (const std::string& value : axis.values) {
      if (value.empty()) {
        throw GridOptionError(site + ": an empty value; give " + axis.key + "=value1,value2,...");
      }
    }
    for (const GridAxis& earlier : axes) {
      if (earlier.key == axis.key) {
        throw GridOptionError(site + ": " + axis.key +
                              " is given by two --grid options; list all its values in one");
      }
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

// "must be sequential, ..., got "x" (did you mean y?)", or "" for a known placement.
std::string placement_problem(const std::string& placement) {
  const std::vector<std::string>& placements = grid_placements();
  if (std::find(placements.begin(), placements.end(), placement) != placements.end()) return "";
  const std::string best = closest_name(placement, placements, 4);
  return "must be sequential, processes, threads or shared, got \"" + placement + "\"" +
         (best.empty() ? "" : " (did you mean " + best + "?)");
}

}  // namespace

GridSpec load_grid(const std::string& path, const std::vector<std::string>& cli_axes,
                   const std::string& cli_placement, int cli_parallel) {
  std::vector<GridAxis> axes = cli_grid_axes(cli_axes);
  if (!cli_placement.empty()) {
    if (const std::string problem = placement_problem(cli_placement); !problem.empty()) {
      throw GridOptionError("--placement " + problem);
    }
  }
  GridSpec spec;
  toml::table root;
  try {
    root = toml::parse(read_recipe_text(path), path);
  } catch (const toml::parse_error& error) {
    const toml::source_position& at = error.source().begin;
    throw ConfigError(path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                      ": TOML syntax error: " + std::string(error.description()));
  }
  if (const toml::node* grid = root.get("grid")) {
    if (!grid->is_table()) throw ConfigError(where(path, *grid) + ": 'grid' must be a table");
    read_grid_table(*grid->as_table(), path, spec);
  }
  for (GridAxis& axis : axes) add_axis(spec, std::move(axis));
  if (!cli_placement.empty()) spec.placement = cli_placement;
  if (cli_parallel >= 0) spec.parallel = cli_parallel;
  if (const std::string problem = placement_problem(spec.placement); !problem.empty()) {
    throw ConfigError(path + ": grid.placement " + problem);
  }
  if (spec.share_seeds && spec.placement != "shared") {
    throw ConfigError(path +
                      ": grid.share_seeds shares one loader between seeds, which only the "
                      "shared placement does; the placement is " +
                      spec.placement);
  }
  if (!spec.axes.empty() && !spec.listed.empty()) {
    throw ConfigError(path +
                      ": a grid has either axes (every combination) or grid.points (a list), "
                      "not both");
  }
  return spec;
}

std::size_t grid_point_count(const GridSpec& spec) {
  if (!spec.listed.empty()) return spec.listed.size();
  if (spec.axes.empty()) return 0;
  std::size_t count = 1;
  for (const GridAxis& axis : spec.axes) {
    const std::size_t values = axis.values.size();
    if (values != 0 && count > std::numeric_limits<std::size_t>::max() / values) {
      return std::numeric_limits<std::size_t>::max();
    }
    count *= values;
  }
  return count;
}

GridPoint grid_point(const GridSpec& spec, std::size_t index) {
  if (index >= grid_point_count(spec)) {
    throw std::out_of_range("grid point " + std::to_string(index) + " is not in the grid");
  }
  // The listed point, or the axes' values at `index` read as a number whose last axis is its
  // fastest-varying digit.
  std::vector<std::pair<std::string, std::string>> values;
  if (!spec.listed.empty()) {
    values = spec.listed[index];
  } else {
    values.resize(spec.axes.size());
    std::size_t rest = index;
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
      const GridAxis& axis = spec.axes[a];
      values[a] = {axis.key, axis.values[rest % axis.values.size()]};
      rest /= axis.values.size();
    }
  }
  GridPoint point;
  point.index = index;
  char folder[32];
  std::snprintf(folder, sizeof folder, "point-%03zu", index);
  point.folder = folder;
  for (const auto& [key, value] : values) {
    point.overrides.push_back(key + "=" + value);
    point.label += (point.label.empty() ? "" : " ") + key + "=" + value;
  }
  return point;
}

std::vector<GridPoint> grid_points(const GridSpec& spec) {
  std::vector<GridPoint> points;
  const std::size_t count = grid_point_count(spec);
  for (std::size_t i = 0; i < count; ++i) points.push_back(grid_point(spec, i));
  return points;
}

std::vector<std::string> grid_keys(const GridSpec& spec) {
  std::vector<std::string> keys;
  for (const GridAxis& axis : spec.axes) keys.push_back(axis.key);
  for (const auto& point : spec.listed) {
    for (const auto& [key, value] : point) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  return keys;
}

}  // namespace ffcv::train
