#include "ffcv/train/dataset_check.hpp"

#include <algorithm>
#include <limits>
#include <variant>

#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::train {

LabelRange read_label_range(const std::string& path, const std::string& field) {
  const Reader reader(path);
  const std::size_t index = reader.field_index(field);
  LabelRange range{std::numeric_limits<std::int64_t>::max(),
                   std::numeric_limits<std::int64_t>::min()};
  for (std::uint64_t sample = 0; sample < reader.num_samples(); ++sample) {
    const FieldValue value = reader.decode(sample, index);
    const auto* label = std::get_if<std::int64_t>(&value);
    if (label == nullptr) {
      throw ConfigError(path + ": field '" + field + "' does not hold integer labels");
    }
    range.min = std::min(range.min, *label);
    range.max = std::max(range.max, *label);
  }
  if (reader.num_samples() == 0) range = LabelRange{};
  return range;
}

void check_labels_fit_model(const Recipe& recipe) {
  const int classes = recipe.model.num_classes;
  for (const auto& [key, path] :
       {std::pair<const char*, const std::string&>{"data.train", recipe.data.train},
        {"data.val", recipe.data.val}}) {
    const LabelRange range = read_label_range(path, recipe.data.label_field);
    if (range.max < range.min) continue;
    if (range.min < 0 || range.max >= classes) {
      throw ConfigError(
          std::string(key) + " " + path + ": labels range over " + std::to_string(range.min) +
          ".." + std::to_string(range.max) + " but model.num_classes = " + std::to_string(classes) +
          " (labels must lie in 0.." + std::to_string(classes - 1) + ")" +
          (range.min >= 0 ? "; set model.num_classes = " + std::to_string(range.max + 1) +
                                " or use the "
                                "dataset the recipe was written for"
                          : ""));
    }
  }
}

}  // namespace ffcv::train
