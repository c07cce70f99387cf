#include "ffcv/settings/rule.hpp"

#include <algorithm>
#include <charconv>

namespace ffcv {

constexpr double kInf = std::numeric_limits<double>::infinity();

Rule any() { return {}; }

Rule at_least(double min) {
  Rule rule;
  rule.min = min;
  return rule;
}

Rule above(double min) {
  Rule rule = at_least(min);
  rule.min_open = true;
  return rule;
}

Rule between(double min, double max, bool min_open, bool max_open) {
  Rule rule;
  rule.min = min;
  rule.min_open = min_open;
  rule.max = max;
  rule.max_open = max_open;
  return rule;
}

Rule one_of(std::vector<std::string_view> choices) {
  Rule rule;
  rule.choices = std::move(choices);
  return rule;
}

Rule non_empty() {
  Rule rule;
  rule.non_empty = true;
  return rule;
}

Rule ordered(Rule rule) {
  rule.ordered = true;
  return rule;
}

bool in_range(double value, const Rule& rule) {
  const bool low_ok = rule.min_open ? value > rule.min : value >= rule.min;
  const bool high_ok = rule.max_open ? value < rule.max : value <= rule.max;
  return low_ok && high_ok;
}

std::string range_text(const Rule& rule) {
  if (rule.min == -kInf && rule.max == kInf) return "";
  const std::string lo = format_number(rule.min), hi = format_number(rule.max);
  if (rule.max == kInf) return (rule.min_open ? "> " : ">= ") + lo;
  if (rule.min == -kInf) return (rule.max_open ? "< " : "<= ") + hi;
  return std::string("in ") + (rule.min_open ? "(" : "[") + lo + ", " + hi +
         (rule.max_open ? ")" : "]");
}

std::string choices_text(const Rule& rule) {
  std::string text;
  for (std::string_view choice : rule.choices) {
    text += (text.empty() ? "" : ", ") + std::string(choice);
  }
  return text;
}

bool is_choice(std::string_view text, const Rule& rule) {
  return rule.choices.empty() ||
         std::find(rule.choices.begin(), rule.choices.end(), text) != rule.choices.end();
}

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace ffcv
