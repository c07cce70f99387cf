// Broken op libraries for op_library_test, one per FFCV_FIXTURE_* definition.
#include <cstring>
#include <stdexcept>

#include "ffcv/steps/op_library.hpp"

namespace {

class Copy final : public ffcv::Operation {
 public:
  std::string name() const override { return "fixture_copy"; }
  ffcv::TensorState declare(const ffcv::TensorState& input) override {
    bytes_ = input.byte_size();
    return input;
  }
  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const ffcv::SampleContext&) const override {
    std::memcpy(output, input, bytes_);
  }

 private:
  std::uint64_t bytes_ = 0;
};

[[maybe_unused]] std::shared_ptr<ffcv::Operation> make_copy(const ffcv::OpParams&) {
  return std::make_shared<Copy>();
}

}  // namespace

#if defined(FFCV_FIXTURE_WRONG_ABI)
// Built for a future ABI.
FFCV_OP_LIBRARY_EXPORT int ffcv_op_library_abi() { return ffcv::kOpLibraryAbi + 1000; }
FFCV_OP_LIBRARY_EXPORT void ffcv_register_ops(ffcv::OpRegistry& registry) {
  registry.register_operation("fixture_wrong_abi", "never registered", make_copy);
}
#elif defined(FFCV_FIXTURE_NO_ABI)
// Forgets the version function.
FFCV_OP_LIBRARY_EXPORT void ffcv_register_ops(ffcv::OpRegistry& registry) {
  registry.register_operation("fixture_no_abi", "never registered", make_copy);
}
#elif defined(FFCV_FIXTURE_EMPTY)
FFCV_OP_LIBRARY(registry) { (void)registry; }
#elif defined(FFCV_FIXTURE_DUPLICATE)
// Tries to replace a built-in beside a new name: neither may be added.
FFCV_OP_LIBRARY(registry) {
  registry.register_operation("fixture_beside_duplicate", "never registered", make_copy);
  registry.register_operation("random_horizontal_flip", "a replacement", make_copy);
}
#elif defined(FFCV_FIXTURE_THROWS)
FFCV_OP_LIBRARY(registry) {
  registry.register_operation("fixture_before_throw", "never registered", make_copy);
  throw std::runtime_error("planted registration failure");
}
#else
#error "define one FFCV_FIXTURE_* variant"
#endif
