#include "ffcv/steps/op_registry.hpp"

#include "ffcv/util/errors.hpp"

namespace ffcv {

namespace {

struct BuiltinRegistry : OpRegistry {
  BuiltinRegistry() { register_builtin_steps(*this); }
};

template <typename Map>
void check_new(const Map& ours, const Map& theirs, const std::string& kind) {
  for (const auto& [name, entry] : theirs) {
    if (ours.contains(name)) throw ConfigError(kind + " '" + name + "' is already registered");
  }
}

}  // namespace

OpRegistry& OpRegistry::global() {
  static BuiltinRegistry registry;
  return registry;
}

void OpRegistry::register_decoder(const std::string& name, std::string summary,
                                  DecoderFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(decoders_, "decoder", name, std::move(summary), std::move(factory));
}

void OpRegistry::register_operation(const std::string& name, std::string summary,
                                    OperationFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(operations_, "operation", name, std::move(summary), std::move(factory));
}

void OpRegistry::register_batch_operation(const std::string& name, std::string summary,
                                          BatchOperationFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(batch_operations_, "batch operation", name, std::move(summary),
                 std::move(factory));
}

void OpRegistry::register_decoder(const std::string& name, std::string summary,
                                  StepSchema parameters, DecoderFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(decoders_, "decoder", name, std::move(summary), std::move(factory),
                 std::optional<StepSchema>(std::move(parameters)));
}

void OpRegistry::register_operation(const std::string& name, std::string summary,
                                    StepSchema parameters, OperationFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(operations_, "operation", name, std::move(summary), std::move(factory),
                 std::optional<StepSchema>(std::move(parameters)));
}

void OpRegistry::register_batch_operation(const std::string& name, std::string summary,
                                          StepSchema parameters, BatchOperationFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(batch_operations_, "batch operation", name, std::move(summary), std::move(factory),
                 std::optional<StepSchema>(std::move(parameters)));
}

bool OpRegistry::has_decoder(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return decoders_.contains(name);
}

bool OpRegistry::has_operation(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return operations_.contains(name);
}

bool OpRegistry::has_batch_operation(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return batch_operations_.contains(name);
}

bool OpRegistry::empty() const {
  std::lock_guard lock(mutex_);
  return decoders_.empty() && operations_.empty() && batch_operations_.empty();
}

void OpRegistry::add_all(const OpRegistry& other) {
  if (&other == this) return;
  std::scoped_lock lock(mutex_, other.mutex_);
  check_new(decoders_, other.decoders_, "decoder");
  check_new(operations_, other.operations_, "operation");
  check_new(batch_operations_, other.batch_operations_, "batch operation");
  decoders_.insert(other.decoders_.begin(), other.decoders_.end());
  operations_.insert(other.operations_.begin(), other.operations_.end());
  batch_operations_.insert(other.batch_operations_.begin(), other.batch_operations_.end());
}

std::shared_ptr<Decoder> OpRegistry::make_decoder(const std::string& name,
                                                  const OpParams& params) const {
  std::lock_guard lock(mutex_);
  return build_named_step(decoders_, "decoder", name, params);
}

std::shared_ptr<Operation> OpRegistry::make_operation(const std::string& name,
                                                      const OpParams& params) const {
  std::lock_guard lock(mutex_);
  return build_named_step(operations_, "operation", name, params);
}

std::shared_ptr<BatchOperation> OpRegistry::make_batch_operation(const std::string& name,
                                                                 const OpParams& params) const {
  std::lock_guard lock(mutex_);
  return build_named_step(batch_operations_, "batch operation", name, params);
}

std::vector<std::pair<std::string, std::string>> OpRegistry::batch_operations() const {
  std::lock_guard lock(mutex_);
  return list_named_steps(batch_operations_);
}

std::vector<std::pair<std::string, std::string>> OpRegistry::decoders() const {
  std::lock_guard lock(mutex_);
  return list_named_steps(decoders_);
}

std::vector<std::pair<std::string, std::string>> OpRegistry::operations() const {
  std::lock_guard lock(mutex_);
  return list_named_steps(operations_);
}

std::optional<StepSchema> OpRegistry::decoder_schema(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return named_step_schema(decoders_, name);
}

std::optional<StepSchema> OpRegistry::operation_schema(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return named_step_schema(operations_, name);
}

std::optional<StepSchema> OpRegistry::batch_operation_schema(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return named_step_schema(batch_operations_, name);
}

}  // namespace ffcv
