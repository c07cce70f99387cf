// RowSource: the rows of one subset of a regression dataset (the training rows, the validation
// rows, or both for a refit), batch by batch, epoch after epoch, as tensors on the solver's
// device. The solver sees only this interface, so that the loader is the one thing that differs
// between a run on our loader and a run on the baseline:
//
//   ffcv  the .beton through ffcv::Loader (worker threads decode ahead into a ring of batch
//         slots, pinned for CUDA, copied to the GPU one batch ahead on a copy stream);
//   mmap  the baseline: the .npy arrays the .beton was written from, memory-mapped, each batch's
//         rows copied out of the mapping into one host buffer by a helper thread one batch
//         ahead (as a DataLoader with one worker does), then copied to the device.
//
// Both visit the same rows in the same batches: an epoch's order is the loader's TraversalOrder
// for (order, seed, epoch) over the subset, cut into consecutive batches of batch_size.
//
// Features arrive as float32 [B, d] in the units they were stored in (not standardized). Bit-packed
// masks (`ffcv write npy --pack-bits`, data.mask_bits = d), bool, uint8 and float16 features are
// widened by our loader's workers into the batch slots for the CPU, and on the device for CUDA
// (the host and the copy then move the compact form); the baseline widens them on the device.
// Big-endian fields (numpy '>f4', ...) are refused when the source is opened: the solver reads
// the stored bytes as little-endian numbers.
#pragma once

#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ffcv/saga/saga_recipe.hpp"

namespace ffcv::saga {

struct RowBatch {
  at::Tensor features;   // [B, d] float32 on the device
  at::Tensor targets;    // [B, K] float32 (regression) or [B] int64 class labels, on the device
  at::Tensor rows;       // [B] int64 dataset row indices, on the device (the SAGA table's rows)
  at::Tensor rows_host;  // the same on the CPU
};

// A contiguous range of dataset rows.
struct RowRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};

class RowSource {
 public:
  virtual ~RowSource() = default;

  // Starts epoch `epoch` (its order is keyed by it); a running epoch is abandoned.
  virtual void start_epoch(std::uint64_t epoch) = 0;
  // The next batch of the epoch, or nullopt at its end. Throws the loader's errors.
  virtual std::optional<RowBatch> next() = 0;

  std::uint64_t rows() const { return range_.count; }
  const RowRange& range() const { return range_; }
  std::uint64_t features() const { return features_; }  // d
  std::uint64_t targets() const { return targets_; }    // K (1 for class labels)
  bool class_labels() const { return class_labels_; }   // targets are Int labels
  // Seconds next() has waited for batches since this source was made (loader stall time).
  double wait_seconds() const { return wait_seconds_; }
  // Where the features and the targets are read from, for messages ("X.beton field 'features'",
  // or the baseline's .npy file).
  const std::string& features_origin() const { return features_origin_; }
  const std::string& targets_origin() const { return targets_origin_; }

 protected:
  std::string features_origin_, targets_origin_;
  RowRange range_;
  std::uint64_t features_ = 0, targets_ = 0;
  bool class_labels_ = false;
  double wait_seconds_ = 0;
};

// The rows of the recipe's dataset (of the .beton, or of the baseline's features array).
std::uint64_t dataset_rows(const SagaRecipe& recipe);

// Opens the rows `range` of the recipe's dataset with the recipe's loader (data.loader), in
// `order` ("random", "quasi_random", "sequential"). `class_labels`: the targets must be an Int
// field (multinomial); otherwise they are read as float regression targets. Checks the fields
// (names, types, shapes, the row range against the file) and, for the baseline, that the .npy
// arrays match the .beton row for row in shape; throws ConfigError naming what does not fit.
std::unique_ptr<RowSource> open_row_source(const SagaRecipe& recipe, RowRange range,
                                           const std::string& order, at::Device device,
                                           bool class_labels);

// The recipe with data.mask_bits as the dataset says it: a .beton written by `ffcv write npy
// --pack-bits` has a sidecar, TRAIN.sources.json, whose packed_bits is d. With data.mask_bits = 0
// and data.features_packed = "auto" that d is used (`note` then says so); a sidecar whose d
// disagrees with data.mask_bits, or that says the features are packed when
// data.features_packed = "no", is refused with a ConfigError naming both.
SagaRecipe resolve_packed_features(const SagaRecipe& recipe, std::string* note);

// One pass over `source` (its epoch-0 order) that finds the first row holding a NaN or an
// infinity in its features or targets and throws ConfigError naming the row (its index in the
// dataset), the column and the file; returns when every value is finite. Throws SolveStopped
// (saga_step.hpp) when `stop` is set.
void check_rows_finite(RowSource& source, const std::atomic<bool>* stop);

// The features of a batch as float32 on `device`: `stored` is [B, ...] bool, uint8, float16 or
// float32 as read; with mask_bits d > 0 and ceil(d/8) uint8 columns it is unpacked (most
// significant bit first, numpy.packbits's order) to d columns of 0/1.
at::Tensor features_as_float(const at::Tensor& stored, std::uint64_t mask_bits, at::Device device);

// The targets as the solver uses them: [B, K] float32, or [B] int64 for class labels.
at::Tensor targets_for_solver(const at::Tensor& stored, bool class_labels, at::Device device);

}  // namespace ffcv::saga
