// "Did you mean ...?" suggestions for mistyped names (CLI options, recipe keys).
//
// A typo in a name the program knows should be answered with the name the user probably meant,
// so every place that rejects an unknown name uses the same distance and the same cut-off.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ffcv {

// Levenshtein distance: the fewest single-character insertions, deletions and substitutions
// that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `name` by edit distance, or "" when none is within `max_distance`
// (inclusive). Ties go to the earliest candidate, so callers control the preference by order.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates,
                         std::size_t max_distance = 3);

}  // namespace ffcv
