#include "ffcv/train/batch_feed.hpp"

#include "ffcv/torch/batch_tensors.hpp"
#ifdef FFCV_WITH_CUDA
#include "ffcv/torch/device_transfer.hpp"
#endif

namespace ffcv::train {

struct BatchFeed::Transfer {
#ifdef FFCV_WITH_CUDA
  explicit Transfer(EpochIterator iterator, int device) : copies(std::move(iterator), device) {}
  torch_adapter::DeviceTransfer copies;
#endif
};

BatchFeed::BatchFeed(EpochIterator iterator, at::Device device)
    : num_batches_(iterator.num_batches()) {
#ifdef FFCV_WITH_CUDA
  if (device.is_cuda()) {
    transfer_ = std::make_unique<Transfer>(std::move(iterator), device.index());
    return;
  }
#endif
  (void)device;
  iterator_.emplace(std::move(iterator));
}

BatchFeed::~BatchFeed() = default;
BatchFeed::BatchFeed(BatchFeed&&) noexcept = default;

std::optional<std::vector<at::Tensor>> BatchFeed::next() {
#ifdef FFCV_WITH_CUDA
  if (transfer_) return transfer_->copies.next();
#endif
  auto batch = iterator_->next();
  if (!batch) return std::nullopt;
  return torch_adapter::to_tensors(std::move(*batch));
}

}  // namespace ffcv::train
