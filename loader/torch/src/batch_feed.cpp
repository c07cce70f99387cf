#include "ffcv/torch/batch_feed.hpp"

#include "ffcv/torch/batch_tensors.hpp"
#ifdef FFCV_WITH_CUDA
#include "ffcv/torch/device_transfer.hpp"
#endif

namespace ffcv::torch_adapter {

struct BatchFeed::Transfer {
#ifdef FFCV_WITH_CUDA
  Transfer(EpochIterator iterator, int device, std::vector<DeviceStage> stages)
      : copies(std::move(iterator), device, std::move(stages)) {}
  DeviceTransfer copies;
#endif
};

BatchFeed::BatchFeed(EpochIterator iterator, at::Device device, std::vector<DeviceStage> stages)
    : num_batches_(iterator.num_batches()) {
#ifdef FFCV_WITH_CUDA
  if (device.is_cuda()) {
    transfer_ = std::make_unique<Transfer>(std::move(iterator), device.index(), std::move(stages));
    return;
  }
#endif
  (void)device;
  iterator_.emplace(std::move(iterator));
  stages_ = std::move(stages);
}

BatchFeed::~BatchFeed() = default;
BatchFeed::BatchFeed(BatchFeed&&) noexcept = default;

TransferTimings BatchFeed::timings() const {
#ifdef FFCV_WITH_CUDA
  if (transfer_) return transfer_->copies.timings();
#endif
  return {};
}

std::optional<std::vector<at::Tensor>> BatchFeed::next() {
#ifdef FFCV_WITH_CUDA
  if (transfer_) return transfer_->copies.next();
#endif
  auto batch = iterator_->next();
  if (!batch) return std::nullopt;
  std::vector<at::Tensor> tensors = to_tensors(std::move(*batch));
  for (std::size_t i = 0; i < stages_.size() && i < tensors.size(); ++i) {
    tensors[i] = stages_[i].apply(tensors[i]);
  }
  return tensors;
}

}  // namespace ffcv::torch_adapter
