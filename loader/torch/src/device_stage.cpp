#include "ffcv/torch/device_stage.hpp"

#include "ffcv/steps/op_params.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::torch_adapter {
namespace {

std::vector<std::shared_ptr<DeviceOperation>> build_steps(const std::string& output,
                                                          const std::vector<std::string>& texts) {
  std::vector<std::shared_ptr<DeviceOperation>> steps;
  for (const std::string& text : texts) {
    try {
      const OpSpec spec = parse_op_spec(text);
      steps.push_back(DeviceOpRegistry::global().make_operation(spec.name, spec.params));
    } catch (const ConfigError& error) {
      throw ConfigError("output '" + output + "': " + error.what());
    }
  }
  return steps;
}

}  // namespace

DeviceStage::DeviceStage(const std::string& output, const TensorState& input,
                         const std::vector<std::string>& steps)
    : DeviceStage(output, input, build_steps(output, steps)) {}

DeviceStage::DeviceStage(const std::string& output, const TensorState& input,
                         std::vector<std::shared_ptr<DeviceOperation>> steps)
    : steps_(std::move(steps)), output_(input) {
  for (const auto& step : steps_) {
    try {
      output_ = step->declare(output_);
    } catch (const ConfigError& error) {
      throw ConfigError("output '" + output + "': " + error.what());
    }
  }
  // to_device, or a step that takes host data and leaves it on the GPU (decode_crops).
  moves_to_device_ = input.device == Device::kCpu && output_.device == Device::kCuda;
}

bool DeviceStage::works_on_host() const {
  for (const auto& step : steps_) {
    if (step->works_on_host()) return true;
  }
  return false;
}

at::Tensor DeviceStage::apply(at::Tensor batch) const {
  for (const auto& step : steps_) batch = step->apply(batch);
  return batch;
}

}  // namespace ffcv::torch_adapter
