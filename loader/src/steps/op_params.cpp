#include "ffcv/steps/op_params.hpp"

#include <charconv>
#include <set>
#include <sstream>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

const char* type_name(const ParamValue& value) {
  static constexpr const char* kNames[] = {"a boolean", "an integer", "a number", "a string",
                                           "a list of numbers"};
  return kNames[value.index()];
}

[[noreturn]] void wrong_type(const std::string& key, const ParamValue& value, const char* wanted) {
  throw ConfigError("parameter '" + key + "' must be " + wanted + ", got " + type_name(value));
}

}  // namespace

OpParams& OpParams::set(const std::string& key, ParamValue value) {
  values_[key] = std::move(value);
  return *this;
}

const ParamValue* OpParams::find(const std::string& key) const {
  used_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

bool OpParams::get_bool(const std::string& key, bool fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* b = std::get_if<bool>(value)) return *b;
  wrong_type(key, *value, "a boolean");
}

std::int64_t OpParams::get_int(const std::string& key, std::int64_t fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* i = std::get_if<std::int64_t>(value)) return *i;
  wrong_type(key, *value, "an integer");
}

double OpParams::get_double(const std::string& key, double fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* d = std::get_if<double>(value)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(value)) return static_cast<double>(*i);
  wrong_type(key, *value, "a number");
}

std::string OpParams::get_string(const std::string& key, const std::string& fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* s = std::get_if<std::string>(value)) return *s;
  wrong_type(key, *value, "a string");
}

std::vector<double> OpParams::get_list(const std::string& key,
                                       const std::vector<double>& fallback) const {
  const ParamValue* value = find(key);
  if (value == nullptr) return fallback;
  if (const auto* list = std::get_if<std::vector<double>>(value)) return *list;
  wrong_type(key, *value, "a list of numbers");
}

bool OpParams::is_list(const std::string& key) const {
  const ParamValue* value = find(key);
  return value != nullptr && std::holds_alternative<std::vector<double>>(*value);
}

std::int64_t OpParams::require_int(const std::string& key) const {
  if (values_.count(key) == 0) throw ConfigError("parameter '" + key + "' is required");
  return get_int(key, 0);
}

double OpParams::require_double(const std::string& key) const {
  if (values_.count(key) == 0) throw ConfigError("parameter '" + key + "' is required");
  return get_double(key, 0);
}

std::vector<double> OpParams::require_list(const std::string& key) const {
  if (values_.count(key) == 0) throw ConfigError("parameter '" + key + "' is required");
  return get_list(key, {});
}

bool OpParams::require_bool(const std::string& key) const {
  if (values_.count(key) == 0) throw ConfigError("parameter '" + key + "' is required");
  return get_bool(key, false);
}

std::string OpParams::require_string(const std::string& key) const {
  if (values_.count(key) == 0) throw ConfigError("parameter '" + key + "' is required");
  return get_string(key, {});
}

std::vector<std::string> OpParams::given() const {
  std::vector<std::string> keys;
  for (const auto& entry : values_) keys.push_back(entry.first);
  return keys;
}

std::vector<std::string> OpParams::asked() const { return {used_.begin(), used_.end()}; }

void OpParams::check_all_used(const std::string& step) const {
  std::string unknown;
  for (const auto& [key, value] : values_) {
    if (used_.count(key) == 0) unknown += (unknown.empty() ? "'" : ", '") + key + "'";
  }
  if (unknown.empty()) return;
  std::string known;
  for (const std::string& key : used_) known += (known.empty() ? "" : ", ") + key;
  throw ConfigError(step + " does not take parameter " + unknown +
                    (known.empty() ? " (it takes none)" : " (it takes: " + known + ")"));
}

namespace {

// `text` whole as an integer or a number; false when it is something else.
bool parse_number(const std::string& text, ParamValue& value) {
  const char* end = text.data() + text.size();
  std::int64_t integer = 0;
  auto [int_end, int_error] = std::from_chars(text.data(), end, integer);
  if (int_error == std::errc() && int_end == end) {
    value = integer;
    return true;
  }
  double number = 0;
  auto [double_end, double_error] = std::from_chars(text.data(), end, number);
  if (double_error == std::errc() && double_end == end) {
    value = number;
    return true;
  }
  return false;
}

ParamValue parse_param_value(const std::string& option, const std::string& key,
                             const std::string& text) {
  ParamValue value;
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    std::vector<double> list;
    std::stringstream items(text.substr(1, text.size() - 2));
    std::string item;
    while (std::getline(items, item, ',')) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      ParamValue number;
      if (!parse_number(item, number)) {
        throw ConfigError(option + ": '" + key + "' lists '" + item + "', not a number");
      }
      list.push_back(std::holds_alternative<double>(number)
                         ? std::get<double>(number)
                         : static_cast<double>(std::get<std::int64_t>(number)));
    }
    return list;
  }
  if (text == "true" || text == "false") return text == "true";
  if (parse_number(text, value)) return value;
  return text;
}

}  // namespace

OpSpec parse_op_spec(const std::string& text) {
  const std::string option = "'" + text + "'";
  const std::size_t colon = text.find(':');
  OpSpec spec{text.substr(0, colon), {}};
  if (spec.name.empty()) throw ConfigError(option + ": no operation name");
  if (colon == std::string::npos) return spec;
  // key=value pairs separated by commas outside brackets.
  std::vector<std::string> pairs(1);
  int depth = 0;
  for (const char c : text.substr(colon + 1)) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0) {
      pairs.emplace_back();
    } else {
      pairs.back() += c;
    }
  }
  std::set<std::string> keys;
  for (const std::string& pair : pairs) {
    const std::size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw ConfigError(option + ": '" + pair + "' is not key=value");
    }
    const std::string key = pair.substr(0, equals);
    if (!keys.insert(key).second) throw ConfigError(option + ": '" + key + "' given twice");
    spec.params.set(key, parse_param_value(option, key, pair.substr(equals + 1)));
  }
  return spec;
}

}  // namespace ffcv
