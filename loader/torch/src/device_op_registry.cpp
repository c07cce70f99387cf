#include "ffcv/torch/device_op_registry.hpp"

#include "ffcv/closest_name.hpp"
#include "ffcv/errors.hpp"

namespace ffcv::torch_adapter {

void register_builtin_device_steps(DeviceOpRegistry& registry);  // device_ops.cpp

namespace {

struct BuiltinDeviceRegistry : DeviceOpRegistry {
  BuiltinDeviceRegistry() { register_builtin_device_steps(*this); }
};

}  // namespace

DeviceOpRegistry& DeviceOpRegistry::global() {
  static BuiltinDeviceRegistry registry;
  return registry;
}

void DeviceOpRegistry::register_operation(const std::string& name, std::string summary,
                                          DeviceOperationFactory factory) {
  std::lock_guard lock(mutex_);
  if (operations_.contains(name)) {
    throw ConfigError("device operation '" + name + "' is already registered");
  }
  operations_[name] = {std::move(summary), std::move(factory)};
}

bool DeviceOpRegistry::has_operation(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return operations_.contains(name);
}

std::shared_ptr<DeviceOperation> DeviceOpRegistry::make_operation(const std::string& name,
                                                                  const OpParams& params) const {
  std::lock_guard lock(mutex_);
  const auto it = operations_.find(name);
  if (it == operations_.end()) {
    std::vector<std::string> known;
    for (const auto& entry : operations_) known.push_back(entry.first);
    const std::string nearest = closest_name(name, known);
    std::string list;
    for (const std::string& key : known) list += (list.empty() ? "" : ", ") + key;
    throw ConfigError("unknown device operation '" + name + "'" +
                      (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") +
                      "; known: " + list);
  }
  auto step = it->second.factory(params);
  params.check_all_used("device operation '" + name + "'");
  return step;
}

std::vector<std::pair<std::string, std::string>> DeviceOpRegistry::operations() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, entry] : operations_) out.emplace_back(name, entry.summary);
  return out;
}

}  // namespace ffcv::torch_adapter
