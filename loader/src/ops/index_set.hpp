// Internal: the set of dataset indices an operation applies to (replace_label, poison), given as
// a recipe's list of numbers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/util/errors.hpp"

namespace ffcv {

class IndexSet {
 public:
  IndexSet(const std::vector<double>& indices, const std::string& op) {
    for (const double index : indices) {
      if (!(index >= 0) || index != std::floor(index) || index > 9.007199254740992e15) {
        throw ConfigError(op + ": indices must be non-negative integers");
      }
      sorted_.push_back(static_cast<std::uint64_t>(index));
    }
    std::sort(sorted_.begin(), sorted_.end());
  }
  bool contains(std::uint64_t index) const {
    return std::binary_search(sorted_.begin(), sorted_.end(), index);
  }

 private:
  std::vector<std::uint64_t> sorted_;
};

}  // namespace ffcv
