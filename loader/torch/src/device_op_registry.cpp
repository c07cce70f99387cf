#include "ffcv/torch/device_op_registry.hpp"

namespace ffcv::torch_adapter {

void register_builtin_device_steps(DeviceOpRegistry& registry);  // device_ops.cpp
void register_gpu_image_steps(DeviceOpRegistry& registry);       // decode_crops*.cpp

namespace {

struct BuiltinDeviceRegistry : DeviceOpRegistry {
  BuiltinDeviceRegistry() {
    register_builtin_device_steps(*this);
    register_gpu_image_steps(*this);
  }
};

}  // namespace

DeviceOpRegistry& DeviceOpRegistry::global() {
  static BuiltinDeviceRegistry registry;
  return registry;
}

void DeviceOpRegistry::register_operation(const std::string& name, std::string summary,
                                          DeviceOperationFactory factory) {
  std::lock_guard lock(mutex_);
  add_named_step(operations_, "device operation", name, std::move(summary), std::move(factory));
}

bool DeviceOpRegistry::has_operation(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return operations_.contains(name);
}

std::shared_ptr<DeviceOperation> DeviceOpRegistry::make_operation(const std::string& name,
                                                                  const OpParams& params) const {
  std::lock_guard lock(mutex_);
  return build_named_step(operations_, "device operation", name, params);
}

std::vector<std::pair<std::string, std::string>> DeviceOpRegistry::operations() const {
  std::lock_guard lock(mutex_);
  return list_named_steps(operations_);
}

}  // namespace ffcv::torch_adapter
