// FailsFor: a test step that copies its input and throws for chosen dataset indices, to plant a
// failing sample at a known place in an epoch; optionally it sleeps first, to make an epoch slow
// enough to interrupt.
#pragma once

#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include "ffcv/steps/operation.hpp"

namespace ffcv::test {

class FailsFor final : public Operation {
 public:
  explicit FailsFor(std::set<std::uint64_t> bad, int sleep_ms = 0)
      : bad_(std::move(bad)), sleep_ms_(sleep_ms) {}
  std::string name() const override { return "fails_for"; }
  TensorState declare(const TensorState& input) override {
    bytes_ = input.byte_size();
    return input;
  }
  void apply(const std::uint8_t* in, std::uint8_t* out, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    if (bad_.count(context.index)) throw std::runtime_error("planted failure");
    std::memcpy(out, in, bytes_);
  }

 private:
  std::set<std::uint64_t> bad_;
  int sleep_ms_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace ffcv::test
