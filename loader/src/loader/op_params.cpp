#include "ffcv/op_params.hpp"

#include "ffcv/errors.hpp"

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

}  // namespace ffcv
