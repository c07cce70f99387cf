// OpRegistry: decoders and operations by name, so recipes and the CLI can list them.
//
// The global registry starts with the built-in steps; user operations come from shared
// libraries loaded at run time (ffcv/steps/op_library.hpp), which register into an empty registry
// of their own that is then added to the global one whole. A name is registered once: a later
// registration under the same name is an error, so nothing can silently replace a built-in.
//
// Parameters: a step registered with a StepSchema (every built-in is) gets its parameters checked
// against that declaration, and its factory receives them with every declared default filled in
// (ffcv/steps/step_schema.hpp); docs/catalogue.md's parameter tables are generated from these
// declarations. A step registered without one (the three-argument calls, as op libraries built
// before declarations existed make them) stays allowed: its factory reads what it wants with its
// own fallbacks, and any given parameter it did not read is a ConfigError.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ffcv/steps/named_steps.hpp"
#include "ffcv/steps/op_params.hpp"
#include "ffcv/steps/operation.hpp"
#include "ffcv/steps/step_schema.hpp"

namespace ffcv {

using DecoderFactory = std::function<std::shared_ptr<Decoder>(const OpParams&)>;
using OperationFactory = std::function<std::shared_ptr<Operation>(const OpParams&)>;
using BatchOperationFactory = std::function<std::shared_ptr<BatchOperation>(const OpParams&)>;

class OpRegistry {
 public:
  // The process-wide registry, holding the built-in steps.
  static OpRegistry& global();

  // An empty registry (no built-ins), e.g. to collect what an op library registers.
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Throw ConfigError when a step of the same kind already has the name.
  void register_decoder(const std::string& name, std::string summary, DecoderFactory factory);
  void register_operation(const std::string& name, std::string summary, OperationFactory factory);
  void register_batch_operation(const std::string& name, std::string summary,
                                BatchOperationFactory factory);
  // The same with the declaration of the step's parameters.
  void register_decoder(const std::string& name, std::string summary, StepSchema parameters,
                        DecoderFactory factory);
  void register_operation(const std::string& name, std::string summary, StepSchema parameters,
                          OperationFactory factory);
  void register_batch_operation(const std::string& name, std::string summary, StepSchema parameters,
                                BatchOperationFactory factory);

  bool has_decoder(const std::string& name) const;
  bool has_operation(const std::string& name) const;
  bool has_batch_operation(const std::string& name) const;
  bool empty() const;  // no step of any kind

  // Adds every step of `other`, or none: throws ConfigError naming the first step whose name is
  // already registered here.
  void add_all(const OpRegistry& other);

  // Builds a step; throws ConfigError for an unknown name (suggesting the closest) or for
  // parameters the step does not take.
  std::shared_ptr<Decoder> make_decoder(const std::string& name, const OpParams& params) const;
  std::shared_ptr<Operation> make_operation(const std::string& name, const OpParams& params) const;
  std::shared_ptr<BatchOperation> make_batch_operation(const std::string& name,
                                                       const OpParams& params) const;

  // (name, summary) of every registered step, sorted by name.
  std::vector<std::pair<std::string, std::string>> decoders() const;
  std::vector<std::pair<std::string, std::string>> operations() const;
  std::vector<std::pair<std::string, std::string>> batch_operations() const;

  // The declared parameters of a step; nullopt for a step registered without a declaration (or
  // not registered).
  std::optional<StepSchema> decoder_schema(const std::string& name) const;
  std::optional<StepSchema> operation_schema(const std::string& name) const;
  std::optional<StepSchema> batch_operation_schema(const std::string& name) const;

 private:
  mutable std::mutex mutex_;
  NamedSteps<DecoderFactory> decoders_;
  NamedSteps<OperationFactory> operations_;
  NamedSteps<BatchOperationFactory> batch_operations_;
};

// Registers the built-in steps (what OpRegistry::global() starts with) into `registry`.
void register_builtin_steps(OpRegistry& registry);

}  // namespace ffcv
