// BatchFeed: the batches of one epoch as tensors on the training device.
//
// On the CPU the tensors view the loader's batch slots (no copy). On CUDA the batches go through
// DeviceTransfer's copy stream, which copies batch b+1 while b trains and gives each host slot
// back only after its copy has finished.
#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "ffcv/loader.hpp"

namespace ffcv::train {

class BatchFeed {
 public:
  BatchFeed(EpochIterator iterator, at::Device device);
  ~BatchFeed();
  BatchFeed(BatchFeed&&) noexcept;

  // The outputs of the next batch in loader order, or nullopt at the end of the epoch.
  std::optional<std::vector<at::Tensor>> next();
  std::uint64_t num_batches() const { return num_batches_; }

 private:
  struct Transfer;
  std::optional<EpochIterator> iterator_;
  std::unique_ptr<Transfer> transfer_;
  std::uint64_t num_batches_ = 0;
};

}  // namespace ffcv::train
