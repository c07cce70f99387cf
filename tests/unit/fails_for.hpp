// FailsFor: a test step that copies its input and throws for chosen dataset indices, to plant a
// failing sample at a known place in an epoch.
#pragma once

#include <cstring>
#include <set>
#include <stdexcept>

#include "ffcv/steps/operation.hpp"

namespace ffcv::test {

class FailsFor final : public Operation {
 public:
  explicit FailsFor(std::set<std::uint64_t> bad) : bad_(std::move(bad)) {}
  std::string name() const override { return "fails_for"; }
  TensorState declare(const TensorState& input) override {
    bytes_ = input.byte_size();
    return input;
  }
  void apply(const std::uint8_t* in, std::uint8_t* out, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    if (bad_.count(context.index)) throw std::runtime_error("planted failure");
    std::memcpy(out, in, bytes_);
  }

 private:
  std::set<std::uint64_t> bad_;
  std::uint64_t bytes_ = 0;
};

}  // namespace ffcv::test
