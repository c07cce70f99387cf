// StepSchema: the one declaration of a pipeline step's parameters.
//
// Each built-in decoder, operation and batch operation declares its parameters once, where it is
// registered (ops/builtin_steps.cpp): name, kind of value, default, Rule and a one-line meaning.
// That declaration is
//   - what OpRegistry checks a recipe's or the CLI's parameters against before the step's factory
//     runs: an unknown name (answered with the nearest declared one), a value of the wrong kind, a
//     missing required parameter, a number outside its rule or a text outside its choices is one
//     ConfigError naming the step, the parameter and the rule (worded as ffcv/settings/rule.hpp
//     words every setting);
//   - where the defaults live: the registry hands the factory the given parameters plus every
//     declared default, so factories read them without a fallback of their own (require_*);
//   - checked against the factory on every build: a factory that reads a parameter its
//     declaration lacks, or leaves a declared one unread, is an Error;
//   - the source of the parameter tables of docs/catalogue.md, which a test keeps up to date.
//
// Steps registered without a declaration (user op libraries may still do that) keep the older
// check: every given parameter must be read by the factory (OpParams::check_all_used).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/settings/rule.hpp"
#include "ffcv/steps/op_params.hpp"

namespace ffcv {

// The kind of value a parameter takes, as OpParams holds it.
enum class ParamKind {
  kBool,             // true or false
  kInteger,          // a whole number
  kNumber,           // a number; an integer is accepted
  kText,             // a string
  kNumbers,          // a list of numbers
  kNumberPair,       // a list of exactly two numbers
  kNumberOrNumbers,  // one number, or a list of numbers
};

// What a step does when the parameter is not given.
struct ParamDefault {
  enum class Mode {
    kRequired,   // it must be given
    kValue,      // `value` is given to the factory in its place
    kDescribed,  // the factory handles its absence as `text` says (e.g. "0 per channel")
  };
  Mode mode = Mode::kRequired;
  ParamValue value;
  std::string text;
};

ParamDefault required();
ParamDefault defaults_to(bool value);
ParamDefault defaults_to(int value);
ParamDefault defaults_to(std::int64_t value);
ParamDefault defaults_to(double value);
ParamDefault defaults_to(const char* value);
ParamDefault defaults_to(std::vector<double> value);
ParamDefault when_absent(std::string meaning);

// One parameter. `rule` bounds a number (every element of a list), lists a text's choices, or
// (`ordered`) asks a pair for low <= high.
struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kNumber;
  ParamDefault fallback;
  Rule rule;
  std::string doc;  // one line, for the docs
};

// Every parameter of one step, in documentation order.
using StepSchema = std::vector<ParamSpec>;

// Checks `given` against `schema` for `step` (e.g. "operation 'cutout'", the start of every
// message) and returns what the factory gets: the given parameters plus every declared default.
// Throws ConfigError for an unknown parameter (with the nearest declared name and the list), a
// value of the wrong kind, a required one missing, a number that is not finite or outside its
// rule, a text not among its choices, or a pair that is not low <= high.
OpParams resolve_params(const StepSchema& schema, const OpParams& given, const std::string& step);

// After the factory ran on `resolved` (resolve_params' result): throws Error when it asked for a
// parameter the schema does not declare, or left a given or defaulted one unread.
void check_factory_reads(const StepSchema& schema, const OpParams& resolved,
                         const std::string& step);

// Texts for docs and listings: the kind ("number", "list of numbers", ...); the default ("0.5",
// "[0.08, 1]", "4/3", "required", or the described text); the rule ("in [0, 1]", "each > 0",
// "one of area, linear", "low <= high", or empty when any value of the kind is valid).
std::string kind_text(ParamKind kind);
std::string default_text(const ParamSpec& spec);
std::string rule_text(const ParamSpec& spec);

}  // namespace ffcv
