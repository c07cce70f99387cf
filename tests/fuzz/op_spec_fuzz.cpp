// Fuzz harness: any text as a step specification (NAME:key=value,... as --op and recipes give
// it), built by the registry of built-in steps and declared on an image state. A text may be
// refused with ffcv::ConfigError; anything else is a finding. Apply is not run: the parameters
// are what the text controls.
#include <cstdint>
#include <string>

#include "ffcv/steps/op_params.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/steps/operation.hpp"
#include "ffcv/util/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ffcv::OpSpec spec = ffcv::parse_op_spec(text);
    const ffcv::OpRegistry& registry = ffcv::OpRegistry::global();
    if (registry.has_operation(spec.name)) {
      auto operation = registry.make_operation(spec.name, spec.params);
      ffcv::TensorState state{ffcv::DType::parse("|u1"), {32, 40, 3}, ffcv::Device::kCpu};
      (void)operation->declare(state);
    } else if (registry.has_batch_operation(spec.name)) {
      (void)registry.make_batch_operation(spec.name, spec.params);
    } else if (registry.has_decoder(spec.name)) {
      (void)registry.make_decoder(spec.name, spec.params);
    }
  } catch (const ffcv::Error&) {
  }
  return 0;
}
