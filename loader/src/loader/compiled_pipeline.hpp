// Internal: a pipeline after declare(): its steps, every intermediate state and buffer size.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ffcv/steps/operation.hpp"

namespace ffcv {

struct CompiledPipeline {
  std::string name;
  std::size_t field = 0;
  std::shared_ptr<Decoder> decoder;
  std::vector<std::shared_ptr<Operation>> operations;
  std::vector<std::shared_ptr<BatchOperation>> batch_operations;
  std::vector<TensorState> states;        // states[0]: decoder output; states[k]: after op k-1
  std::vector<TensorState> batch_states;  // [0]: states.back(); [k]: after batch op k-1
  std::uint64_t intermediate_bytes = 0;   // largest state that is not the output
  std::uint64_t scratch_bytes = 0;        // largest scratch of any step
  std::uint32_t stream_base = 0;          // random stream of step s is stream_base + s
  // Ragged outputs (the decoder's layout): states[0] is one row, and a batch is a block of
  // ragged_batch.hpp with ragged_capacity_rows rows (set per epoch by EpochState).
  std::optional<RaggedLayout> ragged;
  std::uint64_t ragged_capacity_rows = 0;

  // What the per-sample steps write, and what the output holds after the batch operations.
  const TensorState& sample_state() const { return states.back(); }
  const TensorState& output_state() const {
    return batch_states.empty() ? states.back() : batch_states.back();
  }
  bool has_batch_stage() const { return !batch_operations.empty(); }
};

}  // namespace ffcv
