#include "arguments.hpp"

#include <cstdio>
#include <stdexcept>

#include "ffcv/closest_name.hpp"

namespace ffcv::tools {

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

std::string Arguments::closest(const std::string& name) const {
  std::vector<std::string> options;
  for (const Spec& spec : specs_) {
    if (!spec.is_positional) options.push_back(spec.name);
  }
  return closest_name(name, options);
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
      std::string name = arg.substr(2);
      std::optional<std::string> inline_value;
      if (const std::size_t eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const Spec* spec = find(name);
      if (spec == nullptr || spec->is_positional) {
        const std::string suggestion = closest(name);
        throw UsageError("unknown option --" + name +
                         (suggestion.empty() ? "" : " (did you mean --" + suggestion + "?)"));
      }
      if (spec->is_flag) {
        if (inline_value) throw UsageError("option --" + name + " takes no value");
        values_[name].assign(
            1, '1');  // (assigning a literal trips a GCC 12 -Wrestrict false positive)
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
        if (spec->is_repeated) repeated_values_[name].push_back(value);
        values_[name] = std::move(value);
      }
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
    if (!spec.default_value.empty()) line += " [default: " + spec.default_value + "]";
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
  const std::string text = get(name);
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError("--" + name + " expects an integer, got '" + text + "'");
}

double Arguments::get_double(const std::string& name) const {
  const std::string text = get(name);
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError("--" + name + " expects a number, got '" + text + "'");
}

bool Arguments::get_flag(const std::string& name) const { return values_.count(name) != 0; }

unsigned long long Arguments::get_size(const std::string& name) const {
  const std::string text = get(name);
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string suffix = text.substr(used);
  if (suffix.size() > 1 && (suffix.ends_with("iB") || suffix.ends_with("B"))) {
    suffix = suffix.substr(0, 1);
  }
  const std::map<std::string, int> shifts = {{"", 0}, {"K", 10}, {"k", 10}, {"M", 20}, {"G", 30}};
  auto it = shifts.find(suffix);
  if (used == 0 || it == shifts.end()) {
    throw UsageError("--" + name + " expects a size such as 8388608 or 8M, got '" + text + "'");
  }
  return value << it->second;
}

}  // namespace ffcv::tools
