// Steps by name, as the registries hold them (OpRegistry for the CPU steps, DeviceOpRegistry for
// the steps on whole batches): one way to add, build and list them, so that every kind of step
// refuses a taken name, answers an unknown one with the nearest known name, and checks that its
// parameters were all used.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ffcv/errors.hpp"
#include "ffcv/steps/op_params.hpp"

namespace ffcv {

template <typename Factory>
struct NamedStep {
  std::string summary;
  Factory factory;
};

template <typename Factory>
using NamedSteps = std::map<std::string, NamedStep<Factory>>;

// Throws ConfigError "unknown KIND 'NAME' (did you mean 'X'?); known: A, B, ...".
[[noreturn]] void throw_unknown_step(const std::string& kind, const std::string& name,
                                     const std::vector<std::string>& known);

// Throws ConfigError when `name` is taken.
template <typename Factory>
void add_named_step(NamedSteps<Factory>& steps, const std::string& kind, const std::string& name,
                    std::string summary, Factory factory) {
  if (steps.contains(name)) throw ConfigError(kind + " '" + name + "' is already registered");
  steps[name] = {std::move(summary), std::move(factory)};
}

// Builds the step called `name` from `params`; throws ConfigError for an unknown name or for
// parameters the step did not use.
template <typename Factory>
auto build_named_step(const NamedSteps<Factory>& steps, const std::string& kind,
                      const std::string& name, const OpParams& params) {
  const auto it = steps.find(name);
  if (it == steps.end()) {
    std::vector<std::string> known;
    for (const auto& entry : steps) known.push_back(entry.first);
    throw_unknown_step(kind, name, known);
  }
  auto step = it->second.factory(params);
  params.check_all_used(kind + " '" + name + "'");
  return step;
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
