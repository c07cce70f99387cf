#include "ffcv/steps/step_schema.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

ParamDefault required() { return {}; }
ParamDefault defaults_to(bool value) { return {ParamDefault::Mode::kValue, value, {}}; }
ParamDefault defaults_to(int value) { return defaults_to(std::int64_t{value}); }
ParamDefault defaults_to(std::int64_t value) { return {ParamDefault::Mode::kValue, value, {}}; }
ParamDefault defaults_to(double value) { return {ParamDefault::Mode::kValue, value, {}}; }
ParamDefault defaults_to(const char* value) {
  return {ParamDefault::Mode::kValue, std::string(value), {}};
}
ParamDefault defaults_to(std::vector<double> value) {
  return {ParamDefault::Mode::kValue, std::move(value), {}};
}
ParamDefault when_absent(std::string meaning) {
  return {ParamDefault::Mode::kDescribed, {}, std::move(meaning)};
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// A number as the docs show it: shortest round-trip digits, or a small fraction ("4/3") when
// those digits are long and the fraction is exactly the same double.
std::string readable_number(double value) {
  const std::string digits = format_number(value);
  if (digits.size() <= 8) return digits;
  for (int denominator = 2; denominator <= 64; ++denominator) {
    const double numerator = std::round(value * denominator);
    if (numerator / denominator == value && std::abs(numerator) < 1e6) {
      return format_number(numerator) + "/" + std::to_string(denominator);
    }
  }
  return digits;
}

std::string value_text(const ParamValue& value) {
  struct Text {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return readable_number(d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<double>& list) const {
      std::string text;
      for (const double d : list) text += (text.empty() ? "" : ", ") + readable_number(d);
      return "[" + text + "]";
    }
  };
  return std::visit(Text{}, value);
}

// Checks one number against the parameter's rule; `element` names a list's element (or -1).
void check_number(const ParamSpec& spec, double value, long element, const std::string& step) {
  const std::string where = element < 0 ? "" : " (element " + std::to_string(element) + ")";
  if (!std::isfinite(value)) {
    throw ConfigError(step + ": parameter '" + spec.name + "' must be a finite number, got " +
                      format_number(value) + where);
  }
  if (!in_range(value, spec.rule)) {
    throw ConfigError(step + ": parameter '" + spec.name + "' must be " + range_text(spec.rule) +
                      ", got " + format_number(value) + where);
  }
}

void check_list(const ParamSpec& spec, const std::vector<double>& list, const std::string& step) {
  if (spec.kind == ParamKind::kNumberPair && list.size() != 2) {
    throw ConfigError(step + ": parameter '" + spec.name + "' must be two numbers, got " +
                      std::to_string(list.size()));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    check_number(spec, list[i], static_cast<long>(i), step);
  }
  if (spec.rule.ordered && list.size() == 2 && !(list[0] <= list[1])) {
    throw ConfigError(step + ": parameter '" + spec.name +
                      "' must be [low, high] with low <= high, got " + value_text(list));
  }
}

// Reads the given value of `spec` from `params` with the typed getter of its kind (which refuses
// a value of another kind, worded as OpParams words it) and checks it against the rule.
void check_value(const ParamSpec& spec, const OpParams& params, const std::string& step) {
  try {
    switch (spec.kind) {
      case ParamKind::kBool:
        params.get_bool(spec.name, false);
        return;
      case ParamKind::kInteger:
        check_number(spec, static_cast<double>(params.get_int(spec.name, 0)), -1, step);
        return;
      case ParamKind::kNumber:
        check_number(spec, params.get_double(spec.name, 0), -1, step);
        return;
      case ParamKind::kText: {
        const std::string text = params.get_string(spec.name, {});
        if (spec.rule.non_empty && text.empty()) {
          throw ConfigError(step + ": parameter '" + spec.name + "' must not be empty");
        }
        if (!is_choice(text, spec.rule)) {
          throw ConfigError(step + ": parameter '" + spec.name + "' must be one of " +
                            choices_text(spec.rule) + "; got '" + text + "'");
        }
        return;
      }
      case ParamKind::kNumbers:
      case ParamKind::kNumberPair:
        check_list(spec, params.get_list(spec.name, {}), step);
        return;
      case ParamKind::kNumberOrNumbers:
        if (params.is_list(spec.name)) {
          check_list(spec, params.get_list(spec.name, {}), step);
        } else {
          check_number(spec, params.get_double(spec.name, 0), -1, step);
        }
        return;
    }
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    if (message.rfind(step, 0) == 0) throw;
    throw ConfigError(step + ": " + message);  // a wrong kind, worded by OpParams
  }
}

const ParamSpec* find_spec(const StepSchema& schema, const std::string& name) {
  for (const ParamSpec& spec : schema) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace

OpParams resolve_params(const StepSchema& schema, const OpParams& given, const std::string& step) {
  std::vector<std::string> declared;
  for (const ParamSpec& spec : schema) declared.push_back(spec.name);
  std::string unknown;
  for (const std::string& name : given.given()) {
    if (find_spec(schema, name) != nullptr) continue;
    const std::string nearest = closest_name(name, declared);
    unknown += (unknown.empty() ? "'" : ", '") + name + "'" +
               (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)");
  }
  if (!unknown.empty()) {
    throw ConfigError(step + " does not take parameter " + unknown +
                      (declared.empty() ? "; it takes none" : "; it takes: " + joined(declared)));
  }
  std::map<std::string, ParamValue> values;
  for (const std::string& name : given.given()) values[name] = given.value(name);
  const OpParams probe(values);  // the checks' reads stay off the caller's object
  for (const ParamSpec& spec : schema) {
    if (values.contains(spec.name)) {
      check_value(spec, probe, step);
    } else if (spec.fallback.mode == ParamDefault::Mode::kValue) {
      values[spec.name] = spec.fallback.value;
    } else if (spec.fallback.mode == ParamDefault::Mode::kRequired) {
      throw ConfigError(step + ": parameter '" + spec.name + "' is required");
    }
  }
  return OpParams(std::move(values));
}

void check_factory_reads(const StepSchema& schema, const OpParams& resolved,
                         const std::string& step) {
  for (const std::string& name : resolved.asked()) {
    if (find_spec(schema, name) == nullptr) {
      throw Error(step + " reads parameter '" + name + "', which its declaration lacks");
    }
  }
  const std::vector<std::string> asked = resolved.asked();
  for (const std::string& name : resolved.given()) {
    if (!std::binary_search(asked.begin(), asked.end(), name)) {
      throw Error(step + " declares parameter '" + name + "' but does not read it");
    }
  }
}

std::string kind_text(ParamKind kind) {
  switch (kind) {
    case ParamKind::kBool:
      return "boolean";
    case ParamKind::kInteger:
      return "integer";
    case ParamKind::kNumber:
      return "number";
    case ParamKind::kText:
      return "string";
    case ParamKind::kNumbers:
      return "list of numbers";
    case ParamKind::kNumberPair:
      return "two numbers";
    case ParamKind::kNumberOrNumbers:
      return "number or list of numbers";
  }
  return "?";
}

std::string default_text(const ParamSpec& spec) {
  switch (spec.fallback.mode) {
    case ParamDefault::Mode::kRequired:
      return "required";
    case ParamDefault::Mode::kValue:
      return value_text(spec.fallback.value);
    case ParamDefault::Mode::kDescribed:
      return spec.fallback.text;
  }
  return "?";
}

std::string rule_text(const ParamSpec& spec) {
  std::vector<std::string> parts;
  const bool list = spec.kind == ParamKind::kNumbers || spec.kind == ParamKind::kNumberPair ||
                    spec.kind == ParamKind::kNumberOrNumbers;
  if (const std::string range = range_text(spec.rule); !range.empty()) {
    parts.push_back(list ? "each " + range : range);
  }
  if (spec.rule.ordered) parts.push_back("low <= high");
  if (!spec.rule.choices.empty()) parts.push_back("one of " + choices_text(spec.rule));
  if (spec.rule.non_empty) parts.push_back("not empty");
  return joined(parts);
}

}  // namespace ffcv
