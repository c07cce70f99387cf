// Rule: what one setting's value must satisfy beyond its type, stated once and checked by every
// front end that reads the setting (a recipe key, a command-line flag, an ablation key, an
// operation's parameter).
//
// A rule is numeric bounds (for lists, of every element), a set of choices (strings),
// non-emptiness (strings) or lo <= hi (pairs). The texts below are the ones every error message
// and every generated table of settings uses, so a bound reads the same everywhere.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace ffcv {

struct Rule {
  double min = -std::numeric_limits<double>::infinity();
  bool min_open = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;
  std::vector<std::string_view> choices;
  bool non_empty = false;
  bool ordered = false;
};

Rule any();
Rule at_least(double min);
Rule above(double min);
Rule between(double min, double max, bool min_open = false, bool max_open = false);
Rule one_of(std::vector<std::string_view> choices);
Rule non_empty();
Rule ordered(Rule rule);

// Whether `value` lies within the rule's bounds.
bool in_range(double value, const Rule& rule);
// The bounds as a message says them: ">= 0", "> 0", "in [0, 1]", "in (0, 1]"; empty when the
// rule has none.
std::string range_text(const Rule& rule);
// The choices as "a, b, c"; empty when the rule has none.
std::string choices_text(const Rule& rule);
// Whether `text` is one of the rule's choices (true when the rule has none).
bool is_choice(std::string_view text, const Rule& rule);

// The number in shortest round-trip digits ("0.1", "1e-05"), for messages and written settings.
std::string format_number(double value);

}  // namespace ffcv
