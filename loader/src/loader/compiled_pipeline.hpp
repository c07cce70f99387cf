// Internal: a pipeline after declare(): its steps, every intermediate state and buffer size.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ffcv/reader.hpp"
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
  std::uint64_t ragged_largest_rows = 0;  // the epoch's largest sample
  // The output whose geometry (an image) or kept rows (boxes) this ragged output follows:
  // `follows` as the decoder names it, resolved by link_followers().
  std::string follows;
  std::optional<std::size_t> follows_output;
  bool follows_ragged = false;  // the followed output is ragged (rows follow rows)

  // What the per-sample steps write, and what the output holds after the batch operations.
  const TensorState& sample_state() const { return states.back(); }
  const TensorState& output_state() const {
    return batch_states.empty() ? states.back() : batch_states.back();
  }
  bool has_batch_stage() const { return !batch_operations.empty(); }
  bool follows_image() const { return follows_output && !follows_ragged; }
  bool follows_rows() const { return follows_output && follows_ragged; }
};

// Checks that boxes can follow `image`'s pixels through every step: its decoder and per-sample
// steps all say where pixels go, and it has no batch steps. Throws ConfigError starting with
// `where` ("output 'boxes' follows 'image', ").
void check_followable_image(const CompiledPipeline& image, const std::string& where);

// Resolves each ragged output's `follows` among `pipelines`, checking that it can: an image
// output whose decoder and per-sample steps all say where pixels go (no batch steps), for boxes;
// a boxes output that follows an image, for values. Throws ConfigError naming the output.
void link_followers(std::vector<CompiledPipeline>& pipelines);

// The pixel maps of `image` (an output that link_followers accepted as followable) for sample
// `index` of epoch `epoch`: its decoder's, then each pixel-moving step's, with the same keyed
// draws as the pipeline makes.
void map_pipeline_geometry(const CompiledPipeline& image, const Reader& reader, std::uint64_t epoch,
                           const std::array<std::uint32_t, 2>& epoch_key, std::uint64_t index,
                           PlaneMaps& maps);

}  // namespace ffcv
