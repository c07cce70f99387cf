#include "common/arguments.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {
namespace {

constexpr long long kIntMin = std::numeric_limits<long long>::min();
constexpr long long kIntMax = std::numeric_limits<long long>::max();
constexpr unsigned long long kSizeMax = std::numeric_limits<unsigned long long>::max();

// An optional sign, then decimal digits only.
bool is_integer_text(const std::string& text) {
  const std::size_t digits = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (text.size() == digits) return false;
  for (std::size_t i = digits; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

// 1000000 rather than 1e+06 for whole numbers.
std::string real_text(double value) {
  char text[32];
  const bool whole = value == std::floor(value) && std::fabs(value) < 1e15;
  std::snprintf(text, sizeof text, whole ? "%.0f" : "%g", value);
  return text;
}

// 8M for 8388608, 3000 for 3000: the largest binary unit that divides the value.
std::string size_text(unsigned long long value) {
  const char* units[] = {"T", "G", "M", "K"};
  const int shifts[] = {40, 30, 20, 10};
  for (int i = 0; i < 4; ++i) {
    const unsigned long long unit = 1ull << shifts[i];
    if (value != 0 && value % unit == 0) return std::to_string(value / unit) + units[i];
  }
  return std::to_string(value);
}

}  // namespace

Arguments::Arguments(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

Arguments& Arguments::positional(std::string name, std::string help, bool required) {
  specs_.push_back({std::move(name), "", std::move(help), "", false, true, required});
  return *this;
}

Arguments& Arguments::option(std::string name, std::string value_name, std::string help,
                             std::string default_value) {
  specs_.push_back(
      {std::move(name), std::move(value_name), std::move(help), std::move(default_value)});
  return *this;
}

Arguments& Arguments::flag(std::string name, std::string help) {
  specs_.push_back({std::move(name), "", std::move(help), "", true});
  return *this;
}

Arguments& Arguments::pair_option(std::string name, std::string value_names, std::string help) {
  specs_.push_back({std::move(name), std::move(value_names), std::move(help), ""});
  specs_.back().is_pair = true;
  return *this;
}

Arguments& Arguments::repeated_option(std::string name, std::string value_name, std::string help) {
  specs_.push_back({std::move(name), std::move(value_name), std::move(help), ""});
  specs_.back().is_repeated = true;
  return *this;
}

Arguments::Spec& Arguments::last_option(const char* what) {
  if (specs_.empty() || specs_.back().is_flag || specs_.back().is_pair ||
      specs_.back().is_repeated) {
    throw std::logic_error(std::string(what) + " follows no single-valued option");
  }
  return specs_.back();
}

Arguments& Arguments::int_range(long long min, long long max) {
  Range& range = last_option("int_range").range;
  range.kind = RangeKind::kInt;
  range.int_min = min;
  range.int_max = max;
  return *this;
}

Arguments& Arguments::real_range(double min, double max) {
  Range& range = last_option("real_range").range;
  range.kind = RangeKind::kReal;
  range.real_min = min;
  range.real_max = max;
  return *this;
}

Arguments& Arguments::size_range(unsigned long long min, unsigned long long max) {
  Range& range = last_option("size_range").range;
  range.kind = RangeKind::kSize;
  range.size_min = min;
  range.size_max = max;
  return *this;
}

Arguments& Arguments::non_empty() {
  if (specs_.empty() || specs_.back().is_flag || specs_.back().is_positional) {
    throw std::logic_error("non_empty follows no option with a value");
  }
  specs_.back().non_empty = true;
  return *this;
}

std::string Arguments::range_text(const Range& range) const {
  switch (range.kind) {
    case RangeKind::kInt:
      return std::to_string(range.int_min) + ".." + std::to_string(range.int_max);
    case RangeKind::kReal:
      return real_text(range.real_min) + ".." + real_text(range.real_max);
    case RangeKind::kSize:
      return size_text(range.size_min) + ".." + size_text(range.size_max);
    case RangeKind::kNone:
      break;
  }
  return "";
}

std::vector<std::string> Arguments::get_all(const std::string& name) const {
  auto it = repeated_values_.find(name);
  return it == repeated_values_.end() ? std::vector<std::string>{} : it->second;
}

std::pair<std::string, std::string> Arguments::get_pair(const std::string& name) const {
  const std::string both = get(name);
  const std::size_t split = both.find('\n');
  return {both.substr(0, split), both.substr(split + 1)};
}

const Arguments::Spec* Arguments::find(const std::string& name) const {
  for (const Spec& spec : specs_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

Arguments& Arguments::alias(std::string old_name, std::string name, bool is_flag,
                            std::function<std::string(const std::string&)> translate) {
  aliases_.push_back({std::move(old_name), std::move(name), is_flag, std::move(translate)});
  return *this;
}

const Arguments::Alias* Arguments::find_alias(const std::string& name) const {
  for (const Alias& alias : aliases_) {
    if (alias.old_name == name) return &alias;
  }
  return nullptr;
}

std::string Arguments::closest(const std::string& name) const {
  std::vector<std::string> options;
  for (const Spec& spec : specs_) {
    if (!spec.is_positional) options.push_back(spec.name);
  }
  return closest_name(name, options);
}

void Arguments::parse_option(const std::vector<std::string>& argv, std::size_t& i) {
  std::string name = argv[i].substr(2);
  std::optional<std::string> inline_value;
  if (const std::size_t eq = name.find('='); eq != std::string::npos) {
    inline_value = name.substr(eq + 1);
    name = name.substr(0, eq);
  }
  if (const Alias* alias = find_alias(name)) {
    if (alias->is_flag && inline_value) throw UsageError("option --" + name + " takes no value");
    if (!alias->is_flag && !inline_value && i + 1 >= argv.size()) {
      throw UsageError("option --" + name + " needs a value");
    }
    const std::string value = alias->is_flag ? std::string("true")
                              : inline_value ? *inline_value
                                             : argv[++i];
    try {
      values_[alias->name] = alias->translate(value);
    } catch (const ConfigError& error) {
      throw UsageError("--" + name + ": " + error.what());
    }
    note_renamed_once("--" + name, "--" + alias->name);
    return;
  }
  const Spec* spec = find(name);
  if (spec == nullptr || spec->is_positional) {
    const std::string suggestion = closest(name);
    throw UsageError("unknown option --" + name +
                     (suggestion.empty() ? "" : " (did you mean --" + suggestion + "?)"));
  }
  if (spec->is_flag) {
    if (inline_value) throw UsageError("option --" + name + " takes no value");
    values_[name].assign(1, '1');  // (assigning a literal trips a GCC 12 -Wrestrict false positive)
  } else if (spec->is_pair) {
    if (inline_value || i + 2 >= argv.size()) {
      throw UsageError("option --" + name + " needs two values: " + spec->value_name);
    }
    std::string both = argv[i + 1];
    both += '\n';
    both += argv[i + 2];
    values_[name] = std::move(both);
    i += 2;
  } else {
    if (!inline_value && i + 1 >= argv.size()) {
      throw UsageError("option --" + name + " needs a value");
    }
    std::string value = inline_value ? *inline_value : argv[++i];
    if (spec->non_empty && value.empty()) {
      throw UsageError("--" + name + " needs a value, got an empty one");
    }
    if (spec->is_repeated) repeated_values_[name].push_back(value);
    values_[name] = std::move(value);
  }
}

bool Arguments::parse(const std::vector<std::string>& argv) {
  std::vector<const Spec*> positionals;
  for (const Spec& spec : specs_) {
    if (spec.is_positional) positionals.push_back(&spec);
  }
  std::size_t next_positional = 0;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg.rfind("--", 0) == 0) {
      parse_option(argv, i);
      continue;
    }
    if (next_positional >= positionals.size()) {
      throw UsageError("unexpected argument '" + arg + "'");
    }
    values_[positionals[next_positional++]->name] = arg;
  }
  for (; next_positional < positionals.size(); ++next_positional) {
    if (positionals[next_positional]->required) {
      throw UsageError("missing argument " + positionals[next_positional]->name);
    }
  }
  // Every number within its range before the command starts any work.
  for (const Spec& spec : specs_) {
    if (!has(spec.name)) continue;
    if (spec.range.kind == RangeKind::kInt) get_int(spec.name);
    if (spec.range.kind == RangeKind::kReal) get_double(spec.name);
    if (spec.range.kind == RangeKind::kSize) get_size(spec.name);
  }
  return true;
}

std::string Arguments::help() const {
  std::string usage = "usage: ffcv " + command_;
  for (const Spec& spec : specs_) {
    if (spec.is_positional) usage += spec.required ? " " + spec.name : " [" + spec.name + "]";
  }
  usage += " [options]\n\n" + summary_ + "\n";
  std::string positional_help, option_help;
  for (const Spec& spec : specs_) {
    std::string left = spec.is_positional ? spec.name : "--" + spec.name;
    if (!spec.value_name.empty()) left += " " + spec.value_name;
    std::string line = "  " + left;
    line += std::string(left.size() < 28 ? 30 - left.size() : 2, ' ') + spec.help;
    const std::string range = range_text(spec.range);
    if (!range.empty() && !spec.default_value.empty()) {
      line += " [" + range + ", default: " + spec.default_value + "]";
    } else if (!range.empty()) {
      line += " [" + range + "]";
    } else if (!spec.default_value.empty()) {
      line += " [default: " + spec.default_value + "]";
    }
    (spec.is_positional ? positional_help : option_help) += line + "\n";
  }
  if (!positional_help.empty()) usage += "\narguments:\n" + positional_help;
  usage += "\noptions:\n" + option_help + "  --help                        show this help\n";
  return usage;
}

bool Arguments::has(const std::string& name) const {
  if (values_.count(name)) return true;
  const Spec* spec = find(name);
  return spec != nullptr && !spec->default_value.empty();
}

std::optional<std::string> Arguments::get_optional(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  const Spec* spec = find(name);
  if (spec == nullptr) throw std::logic_error("undeclared argument " + name);
  if (!spec->default_value.empty()) return spec->default_value;
  return std::nullopt;
}

std::string Arguments::get(const std::string& name) const {
  auto value = get_optional(name);
  if (!value) throw UsageError("missing --" + name);
  return *value;
}

long long Arguments::get_int(const std::string& name) const {
  const Spec* spec = find(name);
  if (spec != nullptr && spec->range.kind == RangeKind::kInt) {
    return get_int(name, spec->range.int_min, spec->range.int_max);
  }
  return get_int(name, kIntMin, kIntMax);
}

long long Arguments::get_int(const std::string& name, long long min, long long max) const {
  const std::string text = get(name);
  const bool bounded = min != kIntMin || max != kIntMax;
  const std::string range = std::to_string(min) + " and " + std::to_string(max);
  bool in_range = false;
  long long value = 0;
  if (is_integer_text(text)) {
    try {
      value = std::stoll(text);
      in_range = value >= min && value <= max;
    } catch (const std::out_of_range&) {
    }
    if (in_range) return value;
    throw UsageError("--" + name + " must be between " + range + ", got " + text);
  }
  throw UsageError("--" + name + " expects an integer" + (bounded ? " between " + range : "") +
                   ", got '" + text + "'");
}

double Arguments::get_double(const std::string& name) const {
  const Spec* spec = find(name);
  if (spec != nullptr && spec->range.kind == RangeKind::kReal) {
    return get_double(name, spec->range.real_min, spec->range.real_max);
  }
  return get_double(name, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
}

double Arguments::get_double(const std::string& name, double min, double max) const {
  const std::string text = get(name);
  const bool bounded =
      min != -std::numeric_limits<double>::max() || max != std::numeric_limits<double>::max();
  const std::string range = real_text(min) + " and " + real_text(max);
  std::size_t used = 0;
  double value = 0;
  bool parsed = false;
  try {
    value = std::stod(text, &used);
    parsed = used == text.size();
  } catch (const std::out_of_range&) {
    parsed = true;  // beyond a double: out of any range
    value = std::numeric_limits<double>::infinity();
  } catch (const std::exception&) {
  }
  if (!parsed) {
    throw UsageError("--" + name + " expects a number" + (bounded ? " between " + range : "") +
                     ", got '" + text + "'");
  }
  if (!std::isfinite(value)) {
    throw UsageError("--" + name + " expects a finite number" +
                     (bounded ? " between " + range : "") + ", got " + text);
  }
  if (value < min || value > max) {
    throw UsageError("--" + name + " must be between " + range + ", got " + text);
  }
  return value == 0 ? 0.0 : value;  // -0 is 0
}

bool Arguments::get_flag(const std::string& name) const { return values_.count(name) != 0; }

unsigned long long Arguments::get_size(const std::string& name) const {
  const Spec* spec = find(name);
  if (spec != nullptr && spec->range.kind == RangeKind::kSize) {
    return get_size(name, spec->range.size_min, spec->range.size_max);
  }
  return get_size(name, 0, kSizeMax);
}

unsigned long long Arguments::get_size(const std::string& name, unsigned long long min,
                                       unsigned long long max) const {
  const std::string text = get(name);
  const bool bounded = min != 0 || max != kSizeMax;
  const std::string range = size_text(min) + " and " + size_text(max);
  const std::optional<std::uint64_t> size = parse_byte_size(text);
  if (!is_byte_size_text(text)) {
    throw UsageError("--" + name + " expects a size such as 8388608 or 8M" +
                     (bounded ? " between " + range : "") + ", got '" + text + "'");
  }
  const unsigned long long value = size.value_or(0);
  const bool in_range = size && value >= min && value <= max;
  if (!in_range) {
    throw UsageError("--" + name + " must be between " + range + ", got " + text);
  }
  return value;
}

}  // namespace ffcv::tools
