// Steps by name, as the registries hold them (OpRegistry for the CPU steps, DeviceOpRegistry for
// the steps on whole batches): one way to add, build and list them, so that every kind of step
// refuses a taken name, answers an unknown one with the nearest known name, and checks its
// parameters: against its declaration (ffcv/steps/step_schema.hpp) when it has one, else by
// requiring that the factory used them all.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ffcv/steps/op_params.hpp"
#include "ffcv/steps/step_schema.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {

template <typename Factory>
struct NamedStep {
  std::string summary;
  Factory factory;
  std::optional<StepSchema> schema;  // absent: registered without a declaration
};

template <typename Factory>
using NamedSteps = std::map<std::string, NamedStep<Factory>>;

// Throws ConfigError "unknown KIND 'NAME' (did you mean 'X'?); known: A, B, ...".
[[noreturn]] void throw_unknown_step(const std::string& kind, const std::string& name,
                                     const std::vector<std::string>& known);

// Throws ConfigError when `name` is taken.
template <typename Factory>
void add_named_step(NamedSteps<Factory>& steps, const std::string& kind, const std::string& name,
                    std::string summary, Factory factory,
                    std::optional<StepSchema> schema = std::nullopt) {
  if (steps.contains(name)) throw ConfigError(kind + " '" + name + "' is already registered");
  steps[name] = {std::move(summary), std::move(factory), std::move(schema)};
}

// Builds the step called `name` from `params`; throws ConfigError for an unknown name or for
// parameters its declaration refuses (or, without one, that it did not use).
template <typename Factory>
auto build_named_step(const NamedSteps<Factory>& steps, const std::string& kind,
                      const std::string& name, const OpParams& params) {
  const auto it = steps.find(name);
  if (it == steps.end()) {
    std::vector<std::string> known;
    for (const auto& entry : steps) known.push_back(entry.first);
    throw_unknown_step(kind, name, known);
  }
  const std::string what = kind + " '" + name + "'";
  const NamedStep<Factory>& entry = it->second;
  if (!entry.schema) {
    auto step = entry.factory(params);
    params.check_all_used(what);
    return step;
  }
  const OpParams resolved = resolve_params(*entry.schema, params, what);
  auto step = entry.factory(resolved);
  check_factory_reads(*entry.schema, resolved, what);
  return step;
}

// The declaration of the step called `name`; nullopt when it has none or is not registered.
template <typename Factory>
std::optional<StepSchema> named_step_schema(const NamedSteps<Factory>& steps,
                                            const std::string& name) {
  const auto it = steps.find(name);
  return it == steps.end() ? std::nullopt : it->second.schema;
}

// (name, summary) of every step, sorted by name.
template <typename Factory>
std::vector<std::pair<std::string, std::string>> list_named_steps(
    const NamedSteps<Factory>& steps) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, entry] : steps) out.emplace_back(name, entry.summary);
  return out;
}

}  // namespace ffcv
