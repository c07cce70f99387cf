// Operation and Decoder: the steps of a pipeline.
//
// A pipeline turns one field of one sample into one output tensor: a Decoder reads the field's
// metadata column and payload, then Operations transform the result. Before an epoch the loader
// calls declare() along the chain to learn every intermediate state and scratch size; then
// worker threads run the whole chain for one sample at a time, writing the last step's output
// straight into the sample's slot of the batch buffer. Steady state allocates nothing.
//
// Randomness: operations draw from SampleContext::random(), keyed by (seed, epoch, dataset
// index, step), so a sample's result never depends on which thread ran it or when.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ffcv/field.hpp"
#include "ffcv/payload_reader.hpp"
#include "ffcv/steps/plane_map.hpp"
#include "ffcv/steps/tensor_state.hpp"
#include "ffcv/util/counter_random.hpp"

namespace ffcv {

class Reader;

// What a step knows about the sample it is processing.
struct SampleContext {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;                   // dataset index of the sample
  std::uint32_t stream = 0;                  // identifies the step: pipeline and position within it
  std::array<std::uint32_t, 2> epoch_key{};  // from epoch_key(seed, epoch)

  // The Philox key of (seed, epoch), computed once per epoch.
  static std::array<std::uint32_t, 2> make_epoch_key(std::uint64_t seed, std::uint64_t epoch);

  // The n-th random 64-bit value / uniform double in [0, 1) of (seed, epoch, index, stream).
  std::uint64_t random_u64(std::uint32_t n) const;
  double uniform(std::uint32_t n) const;
};

// How the samples of a ragged output (a variable number of rows each) share their batch.
enum class RaggedLayout {
  kPacked,  // every sample's rows back to back, with count + 1 row offsets (torch's jagged layout)
  kPadded,  // [count, rows, ...]: each sample's rows, then zero rows up to the batch's largest
            // sample, with count lengths
};
// "packed" | "padded", as the ragged decoder's `layout` spells them.
inline const char* ragged_layout_name(RaggedLayout layout) {
  return layout == RaggedLayout::kPacked ? "packed" : "padded";
}

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string name() const = 0;
  // The output state for `field` of `reader` (decoders may look at the whole dataset, e.g. to
  // check that all images share one size). Throws ConfigError when the field does not fit.
  virtual TensorState declare(const Reader& reader, std::size_t field) = 0;
  // Per-worker scratch bytes, known after declare().
  virtual std::uint64_t scratch_bytes() const { return 0; }
  // Whether decode() reads the payload (heap data); false lets the loader skip reading pages.
  virtual bool reads_payload() const { return true; }
  // Ragged decoders only (variable-length fields): the layout of their batches. Their declare()
  // gives the state of one row, rows() a sample's number of rows read from its metadata column
  // alone (the loader sizes each batch from it before anything is decoded), and decode() writes
  // that many rows.
  virtual std::optional<RaggedLayout> ragged_layout() const { return std::nullopt; }
  virtual std::uint64_t rows(const std::uint8_t* /*column*/) const { return 1; }
  // A ragged decoder's rows may follow another output of the same sample, named here ("" when
  // they follow none): an image output, through whose pixel maps they move (boxes: moved,
  // clipped, the small ones dropped; move_rows()), or a ragged output that follows an image,
  // whose kept rows they keep (labels beside their boxes).
  virtual std::string follows() const { return {}; }
  // Whether the rows are coordinates that move with the followed image (boxes).
  virtual bool rows_move() const { return false; }
  // Moves `count` decoded rows through `maps` in place, leaving the kept ones first in order;
  // sets kept[i] to 1 or 0 for each original row; returns how many were kept.
  virtual std::uint64_t move_rows(std::uint8_t* /*rows*/, std::uint64_t count,
                                  const PlaneMaps& /*maps*/, std::uint8_t* kept) const {
    for (std::uint64_t i = 0; i < count; ++i) kept[i] = 1;
    return count;
  }
  // Image decoders that can say where a sample's pixels go: its maps, from the sample's column
  // and `context`, drawn exactly as decode() draws them. Others cannot be followed.
  virtual bool maps_geometry() const { return false; }
  virtual void map_geometry(const std::uint8_t* /*column*/, const SampleContext& /*context*/,
                            PlaneMaps& /*maps*/) const {}
  // Decodes one sample into `out` (declare()'s byte_size() bytes; times rows() when ragged).
  virtual void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
                      std::span<std::uint8_t> scratch, const SampleContext& context) const = 0;
};

class Operation {
 public:
  virtual ~Operation() = default;
  virtual std::string name() const = 0;
  // The output state for `input`. Throws ConfigError when the input does not fit.
  virtual TensorState declare(const TensorState& input) = 0;
  virtual std::uint64_t scratch_bytes() const { return 0; }
  // How the step treats pixel positions, for boxes that follow its image (plane_map.hpp); a
  // kMoves step adds its map of the sample to `maps`, drawn exactly as apply() draws.
  virtual PixelGeometry pixel_geometry() const { return PixelGeometry::kUnknown; }
  virtual void map_geometry(const SampleContext& /*context*/, PlaneMaps& /*maps*/) const {}
  // Transforms one sample: `input` holds the input state's bytes, `output` receives the output
  // state's bytes (the two never alias).
  virtual void apply(const std::uint8_t* input, std::uint8_t* output,
                     std::span<std::uint8_t> scratch, const SampleContext& context) const = 0;
};

// What a batch operation knows about the batch it is processing.
struct BatchContext {
  std::uint64_t epoch = 0;
  std::uint64_t batch = 0;                   // position of the batch in its epoch
  std::span<const std::uint64_t> indices;    // dataset indices of its samples, in order
  std::array<std::uint32_t, 2> epoch_key{};  // from SampleContext::make_epoch_key(seed, epoch)

  // The n-th uniform double in [0, 1) of (seed, epoch, batch, group). Operations that share a
  // group draw the same numbers, so an image mixup and a label mixup of the same group pair the
  // same samples with the same weights.
  double uniform(std::uint32_t group, std::uint32_t n) const;
};

// A step that needs the whole batch of one output (mixup pairs each sample with another). It runs
// once per batch, after every sample of the batch has passed its pipeline's per-sample steps, on
// the worker that finished the batch. `input` holds batch_size samples of the input state,
// `output` receives as many of the output state (the two never alias).
class BatchOperation {
 public:
  virtual ~BatchOperation() = default;
  virtual std::string name() const = 0;
  // The per-sample output state for the per-sample `input` state. Throws ConfigError.
  virtual TensorState declare(const TensorState& input) = 0;
  virtual void apply(const std::uint8_t* input, std::uint8_t* output,
                     const BatchContext& context) const = 0;
};

}  // namespace ffcv
