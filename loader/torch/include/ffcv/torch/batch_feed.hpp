// BatchFeed: the adapter's one entry from an epoch to tensors on the training device: the
// batches of one epoch, after each output's device stage (ffcv/torch/device_stage.hpp).
//
// On the CPU the stages run on the views of the loader's batch slots when a batch is taken. On
// CUDA the batches go through DeviceTransfer's copy stream, which copies batch b+1 and runs its
// stages while b trains, and gives each host slot back only after its copy has finished.
#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "ffcv/loader.hpp"
#include "ffcv/torch/device_stage.hpp"
#include "ffcv/torch/transfer_timings.hpp"

namespace ffcv::torch_adapter {

class BatchFeed {
 public:
  // `stages`: one per loader output, in order (InputNormalizer::stages).
  BatchFeed(EpochIterator iterator, at::Device device, std::vector<DeviceStage> stages);
  ~BatchFeed();
  BatchFeed(BatchFeed&&) noexcept;

  // The outputs of the next batch in loader order, or nullopt at the end of the epoch.
  std::optional<std::vector<at::Tensor>> next();
  std::uint64_t num_batches() const { return num_batches_; }
  // Where the batches' time went so far (DeviceTransfer's; zeros on the CPU).
  TransferTimings timings() const;

 private:
  struct Transfer;
  std::optional<EpochIterator> iterator_;
  std::unique_ptr<Transfer> transfer_;
  std::vector<DeviceStage> stages_;  // on the CPU
  std::uint64_t num_batches_ = 0;
};

}  // namespace ffcv::torch_adapter
