// OpParams: the named parameters of a decoder or operation, as a recipe gives them.
//
// Strict: every parameter must be read by the step it configures; check_all_used() reports the
// unknown ones with the closest known name, so a typo in a recipe is an error, not a default.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace ffcv {

using ParamValue = std::variant<bool, std::int64_t, double, std::string, std::vector<double>>;

class OpParams {
 public:
  OpParams() = default;
  explicit OpParams(std::map<std::string, ParamValue> values) : values_(std::move(values)) {}

  OpParams& set(const std::string& key, ParamValue value);

  // Typed reads with defaults; a present value of the wrong type throws ConfigError. Integers
  // are accepted where doubles are asked for.
  bool get_bool(const std::string& key, bool fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::vector<double> get_list(const std::string& key, const std::vector<double>& fallback) const;
  // Whether `key` is given as a list (for parameters that take a number or a list).
  bool is_list(const std::string& key) const;
  // The same, for parameters without a fallback of the factory's own (ConfigError when absent):
  // those without a default, and every parameter of a step with a declaration
  // (ffcv/steps/step_schema.hpp), whose defaults the registry has filled in.
  bool require_bool(const std::string& key) const;
  std::int64_t require_int(const std::string& key) const;
  double require_double(const std::string& key) const;
  std::string require_string(const std::string& key) const;
  std::vector<double> require_list(const std::string& key) const;

  // The given names, and the names a get_*/require_*/is_list call asked for, sorted; the value
  // of a given name (std::out_of_range otherwise), without counting as a read. For checking
  // parameters against a step's declaration (ffcv/steps/step_schema.hpp).
  std::vector<std::string> given() const;
  std::vector<std::string> asked() const;
  const ParamValue& value(const std::string& key) const { return values_.at(key); }

  // Throws ConfigError naming `step` and each parameter no get_*/require_* call asked for.
  void check_all_used(const std::string& step) const;

 private:
  const ParamValue* find(const std::string& key) const;
  std::map<std::string, ParamValue> values_;
  mutable std::set<std::string> used_;
};

// A step named with its parameters in one line of text, as the CLI (--op) and recipes give it:
//   NAME[:key=value,key=value,...]
// Values are integers, numbers, true/false, [number, ...] lists or strings. ConfigError names
// the text for a missing name, a pair that is not key=value, a key given twice or a list item
// that is not a number.
struct OpSpec {
  std::string name;
  OpParams params;
};
OpSpec parse_op_spec(const std::string& text);

}  // namespace ffcv
