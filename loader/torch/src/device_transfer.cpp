#include "ffcv/torch/device_transfer.hpp"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <c10/cuda/CUDAFunctions.h>

#include <map>
#include <utility>

#include "ffcv/util/errors.hpp"

namespace ffcv::torch_adapter {

namespace {

// The calling thread's copy stream for `device`, the same for every epoch. The caching
// allocator reuses a freed block only for the stream it was allocated on, so a new pool stream
// per epoch would give each epoch fresh device allocations for its copies and keep the last
// epoch's cached on a stream nobody uses any more. One stream per thread keeps the transfers of
// models trained side by side on threads independent of each other.
c10::cuda::CUDAStream transfer_stream(int device) {
  thread_local std::map<int, c10::cuda::CUDAStream> streams;
  if (device < 0) device = c10::cuda::current_device();
  auto found = streams.find(device);
  if (found == streams.end()) {
    found =
        streams
            .emplace(device, c10::cuda::getStreamFromPool(/*isHighPriority=*/false,
                                                          static_cast<c10::DeviceIndex>(device)))
            .first;
  }
  return found->second;
}

}  // namespace

struct DeviceTransfer::StreamHolder {
  c10::cuda::CUDAStream stream;
};

struct DeviceTransfer::InFlight {
  std::vector<at::Tensor> host;    // views of the batch slot (they hold the lease)
  std::vector<at::Tensor> device;  // the copies
  at::cuda::CUDAEvent copied;
};

DeviceTransfer::DeviceTransfer(EpochIterator epoch, int device)
    : DeviceTransfer(std::move(epoch), device, {}) {}

DeviceTransfer::DeviceTransfer(EpochIterator epoch, int device, std::vector<DeviceStage> stages)
    : epoch_(std::move(epoch)),
      device_(device),
      stages_(std::move(stages)),
      stream_(std::make_unique<StreamHolder>(StreamHolder{transfer_stream(device)})) {
  // Pin the device down (-1 meant the current one), so that next() waits on the consumer
  // stream of this device even if the caller switches devices later.
  device_ = stream_->stream.device_index();
  for (const DeviceStage& stage : stages_) threaded_ = threaded_ || stage.works_on_host();
  if (threaded_) preparer_ = std::thread([this] { prepare_loop(); });
}

DeviceTransfer::~DeviceTransfer() {
  if (threaded_) {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    // A preparing thread waiting in the loader's next() then throws "stopped" and ends; one
    // between batches sees stopping_ and enqueues nothing more.
    epoch_.stop();
    preparer_.join();
  }
  // Host slots (copying_, prepared_, released with this object) must outlive the work that
  // reads them.
  try {
    stream_->stream.synchronize();
  } catch (const std::exception&) {
    // A device error already surfaced (or will) elsewhere; a destructor must not throw.
  }
}

std::unique_ptr<DeviceTransfer::InFlight> DeviceTransfer::prepare() {
  // The loader lends at most batches_ahead + 1 slots at once. Keep only the batch just handed
  // out in flight (an older copy, enqueued a step earlier, has finished or nearly so), so the
  // transfer holds two slots at most, whatever the lead of the host over the GPU.
  for (;;) {
    std::unique_ptr<InFlight> oldest;
    {
      std::unique_lock lock(mutex_, std::defer_lock);
      if (threaded_) lock.lock();
      if (copying_.size() <= 1) break;
      oldest = std::move(copying_.front());
      copying_.pop_front();
    }
    oldest->copied.synchronize();  // then its host slot goes back
  }
  std::optional<Batch> batch = epoch_.next();
  if (!batch) return nullptr;
  if (threaded_) {
    const std::lock_guard lock(mutex_);
    if (stopping_) return nullptr;  // the transfer ends: no more work for the GPU
  }
  auto flight = std::make_unique<InFlight>();
  flight->host = to_tensors(std::move(*batch));
  if (!stages_.empty() && stages_.size() != flight->host.size()) {
    throw ConfigError("DeviceTransfer: " + std::to_string(stages_.size()) + " stages for " +
                      std::to_string(flight->host.size()) + " loader outputs");
  }
  // Also makes `device_` the current device, where to_device copies.
  const c10::cuda::CUDAStreamGuard guard(stream_->stream);
  try {
    for (std::size_t i = 0; i < flight->host.size(); ++i) {
      const at::Tensor& host = flight->host[i];
      flight->device.push_back(stages_.empty() ? host.to(torch::Device(torch::kCUDA, device_),
                                                         /*non_blocking=*/true)
                                               : stages_[i].apply(host));
    }
  } catch (...) {
    // Work already enqueued may still read the host slot: it goes back only after that work.
    try {
      stream_->stream.synchronize();
    } catch (const std::exception&) {
      // The stage's own error is the one to report.
    }
    throw;
  }
  flight->copied.record(stream_->stream);
  return flight;
}

void DeviceTransfer::start_next() {
  ahead_ = prepare();
  ended_ = ahead_ == nullptr;
}

void DeviceTransfer::release_finished() {
  std::unique_lock lock(mutex_, std::defer_lock);
  if (threaded_) lock.lock();
  while (!copying_.empty() && copying_.front()->copied.query()) copying_.pop_front();
}

std::vector<at::Tensor> DeviceTransfer::hand_out(InFlight& ready) {
  const c10::cuda::CUDAStream consumer = c10::cuda::getCurrentCUDAStream(device_);
  ready.copied.block(consumer);
  for (const at::Tensor& tensor : ready.device) {
    // The copies were allocated on the transfer stream but are used on the consumer's.
    if (tensor.is_cuda()) {
      c10::cuda::CUDACachingAllocator::recordStream(tensor.storage().data_ptr(), consumer);
    }
  }
  std::vector<at::Tensor> out = std::move(ready.device);
  ready.device.clear();
  return out;
}

std::optional<std::vector<at::Tensor>> DeviceTransfer::next() {
  if (threaded_) return next_prepared();
  if (deferred_error_) std::rethrow_exception(std::exchange(deferred_error_, nullptr));
  release_finished();
  if (!ahead_ && !ended_) start_next();  // waits for the loader
  if (!ahead_) return std::nullopt;
  std::unique_ptr<InFlight> ready = std::move(ahead_);
  std::vector<at::Tensor> out = hand_out(*ready);
  copying_.push_back(std::move(ready));
  // Copy batch b+1 now if the loader has it, so the copy overlaps step b; if not, the next call
  // waits for it, after the caller has launched step b rather than before. Batch b+1 failing
  // (a sample that cannot be decoded, a device error) must not cost batch b: its error is kept
  // and thrown by the next call.
  if (epoch_.ready()) {
    try {
      start_next();
    } catch (...) {
      deferred_error_ = std::current_exception();
    }
  }
  return out;
}

void DeviceTransfer::prepare_loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || prepared_ == nullptr; });
      if (stopping_) return;
    }
    std::unique_ptr<InFlight> flight;
    try {
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_));
      flight = prepare();
    } catch (...) {
      const std::lock_guard lock(mutex_);
      thread_error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    const std::lock_guard lock(mutex_);
    if (flight == nullptr) {
      ended_ = true;
      changed_.notify_all();
      return;
    }
    prepared_ = std::move(flight);
    changed_.notify_all();
  }
}

std::optional<std::vector<at::Tensor>> DeviceTransfer::next_prepared() {
  release_finished();
  InFlight* ready = nullptr;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return prepared_ != nullptr || ended_ || thread_error_; });
    if (prepared_ == nullptr) {
      if (thread_error_) std::rethrow_exception(thread_error_);
      return std::nullopt;
    }
    // Into copying_ before the thread prepares the next batch, which may then give back the
    // slot of the batch before this one, never this one's.
    ready = prepared_.get();
    copying_.push_back(std::move(prepared_));
  }
  changed_.notify_all();
  return hand_out(*ready);
}

}  // namespace ffcv::torch_adapter
