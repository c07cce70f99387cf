// Checks that a recipe's datasets fit its model before anything is trained or written: every
// label of data.train and data.val lies in 0..model.num_classes-1.
//
// A label outside that range would otherwise surface deep inside the loss as LibTorch's
// "Target 4 is out of bounds." on the first batch that holds it, after the run folder was made.
// The labels are read from the files' metadata tables (an Int field keeps its value there), so
// the check costs one pass over a few bytes per sample.
#pragma once

#include <cstdint>
#include <string>

#include "ffcv/train/recipe.hpp"

namespace ffcv::train {

struct LabelRange {
  std::int64_t min = 0;
  std::int64_t max = -1;  // max < min: no samples
};

// The smallest and largest value of the Int field `field` of the .beton at `path`. Throws
// FormatError / IoError for an unreadable file and ConfigError when the field is missing or is
// not an Int field.
LabelRange read_label_range(const std::string& path, const std::string& field);

// Throws ConfigError naming the file, the labels found and the recipe key to change when a
// label of data.train or data.val is negative or not below model.num_classes.
void check_labels_fit_model(const Recipe& recipe);

}  // namespace ffcv::train
