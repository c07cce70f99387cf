#include "ffcv/op_registry.hpp"

#include "ffcv/errors.hpp"

namespace ffcv {

void register_builtin_steps(OpRegistry& registry);  // ops/builtin_steps.cpp

OpRegistry::OpRegistry() { register_builtin_steps(*this); }

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::register_decoder(const std::string& name, std::string summary,
                                  DecoderFactory factory) {
  std::lock_guard lock(mutex_);
  decoders_[name] = {std::move(summary), std::move(factory)};
}

void OpRegistry::register_operation(const std::string& name, std::string summary,
                                    OperationFactory factory) {
  std::lock_guard lock(mutex_);
  operations_[name] = {std::move(summary), std::move(factory)};
}

namespace {

template <typename Map>
auto build(const Map& map, const std::string& kind, const std::string& name,
           const OpParams& params) {
  auto it = map.find(name);
  if (it == map.end()) {
    std::string known;
    for (const auto& [key, entry] : map) known += (known.empty() ? "" : ", ") + key;
    throw ConfigError("unknown " + kind + " '" + name + "' (known: " + known + ")");
  }
  auto step = it->second.factory(params);
  params.check_all_used(kind + " '" + name + "'");
  return step;
}

template <typename Map>
std::vector<std::pair<std::string, std::string>> list(const Map& map) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, entry] : map) out.emplace_back(name, entry.summary);
  return out;
}

}  // namespace

std::shared_ptr<Decoder> OpRegistry::make_decoder(const std::string& name,
                                                  const OpParams& params) const {
  std::lock_guard lock(mutex_);
  return build(decoders_, "decoder", name, params);
}

std::shared_ptr<Operation> OpRegistry::make_operation(const std::string& name,
                                                      const OpParams& params) const {
  std::lock_guard lock(mutex_);
  return build(operations_, "operation", name, params);
}

std::vector<std::pair<std::string, std::string>> OpRegistry::decoders() const {
  std::lock_guard lock(mutex_);
  return list(decoders_);
}

std::vector<std::pair<std::string, std::string>> OpRegistry::operations() const {
  std::lock_guard lock(mutex_);
  return list(operations_);
}

}  // namespace ffcv
