#include "ffcv/torch/device_transfer.hpp"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <map>
#include <utility>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::torch_adapter {

namespace {

// The calling thread's `count` copy streams for `device` (high priority), the same for every
// epoch. The caching allocator reuses a freed block only for the stream it was allocated on, so
// new pool streams per epoch would give each epoch fresh device allocations for its copies and
// keep the last epoch's cached on streams nobody uses any more. Streams per thread keep the
// transfers of models trained side by side on threads independent of each other.
std::vector<c10::cuda::CUDAStream> transfer_streams(int device, std::size_t count) {
  thread_local std::map<int, std::vector<c10::cuda::CUDAStream>> streams;
  if (device < 0) device = c10::cuda::current_device();
  std::vector<c10::cuda::CUDAStream>& held = streams[device];
  while (held.size() < count) {
    held.push_back(c10::cuda::getStreamFromPool(/*isHighPriority=*/true,
                                                static_cast<c10::DeviceIndex>(device)));
  }
  return {held.begin(), held.begin() + static_cast<std::ptrdiff_t>(count)};
}

}  // namespace

struct DeviceTransfer::StreamHolder {
  std::vector<c10::cuda::CUDAStream> streams;
};

struct DeviceTransfer::InFlight {
  explicit InFlight(c10::cuda::CUDAStream on) : stream(on) {}
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  // However it goes (handed out and finished, or dropped on an error or a stop), the host slot
  // goes back only after the work that reads it: a wait that is free once the copy is done.
  ~InFlight() {
    if (host.empty()) return;
    try {
      if (recorded) {
        copied.synchronize();
      } else {
        stream.synchronize();
      }
    } catch (const std::exception&) {
      // A device error surfaces elsewhere; a destructor must not throw.
    }
  }

  c10::cuda::CUDAStream stream;                   // where its copy and stages were enqueued
  std::vector<at::Tensor> host;                   // views of the batch slot (they hold the lease)
  std::vector<at::Tensor> device;                 // the copies
  at::cuda::CUDAEvent started{cudaEventDefault};  // timing events: GPU time per batch
  at::cuda::CUDAEvent copied{cudaEventDefault};
  bool recorded = false;    // `copied` is recorded
  double host_seconds = 0;  // enqueueing its copy and stages
  bool counted = false;
};

DeviceTransfer::DeviceTransfer(EpochIterator epoch, int device)
    : DeviceTransfer(std::move(epoch), device, {}) {}

DeviceTransfer::DeviceTransfer(EpochIterator epoch, int device, std::vector<DeviceStage> stages)
    : epoch_(std::move(epoch)), device_(device), stages_(std::move(stages)) {
  for (const DeviceStage& stage : stages_) threaded_ = threaded_ || stage.works_on_host();
  streams_ = std::make_unique<StreamHolder>(
      StreamHolder{transfer_streams(device, threaded_ ? kPreparingThreads : 1)});
  // Pin the device down (-1 meant the current one), so that next() waits on the consumer
  // stream of this device even if the caller switches devices later.
  device_ = streams_->streams.front().device_index();
  timings_.preparers = static_cast<int>(streams_->streams.size());
  if (threaded_) {
    using Preparers = OrderedPreparers<Batch, std::unique_ptr<InFlight>>;
    preparers_ = std::make_unique<Preparers>(
        streams_->streams.size(), std::uint64_t{kPreparingThreads},
        Preparers::Steps{[this] {
                           c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_));
                           return take_next();
                         },
                         [this](Batch batch, std::size_t thread) {
                           c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_));
                           return enqueue(std::move(batch), thread);
                         },
                         // A thread waiting in the loader's next() then throws "stopped".
                         [this] { epoch_.stop(); }});
  }
}

DeviceTransfer::~DeviceTransfer() {
  // The threads first (they enqueue nothing more), then the GPU's work: host slots (copying_,
  // the prepared batches, released with this object) must outlive the work that reads them.
  if (preparers_) preparers_->stop_and_join();
  for (const c10::cuda::CUDAStream& stream : streams_->streams) {
    try {
      stream.synchronize();
    } catch (const std::exception&) {
      // A device error already surfaced (or will) elsewhere; a destructor must not throw.
    }
  }
}

void DeviceTransfer::keep_one_copying() {
  // The loader lends at most batches_ahead + 2 slots at once. Keep only the batch handed out
  // last in flight (an older copy, enqueued a step earlier, has finished or nearly so), so the
  // transfer holds few slots, whatever the lead of the host over the GPU.
  for (;;) {
    std::unique_ptr<InFlight> oldest;
    {
      const std::lock_guard lock(mutex_);
      if (copying_.size() <= 1) return;
      oldest = std::move(copying_.front());
      copying_.pop_front();
    }
    oldest->copied.synchronize();  // then its host slot goes back
    const std::lock_guard lock(mutex_);
    count_finished(*oldest);
  }
}

std::unique_ptr<DeviceTransfer::InFlight> DeviceTransfer::enqueue(Batch batch,
                                                                  std::size_t stream_index) {
  const c10::cuda::CUDAStream& stream = streams_->streams.at(stream_index);
  auto flight = std::make_unique<InFlight>(stream);
  flight->host = to_tensors(std::move(batch));
  if (!stages_.empty() && stages_.size() != flight->host.size()) {
    throw ConfigError("DeviceTransfer: " + std::to_string(stages_.size()) + " stages for " +
                      std::to_string(flight->host.size()) + " loader outputs");
  }
  // Also makes `device_` the current device, where to_device copies.
  const c10::cuda::CUDAStreamGuard guard(stream);
  const Stopwatch host_work;
  flight->started.record(stream);
  try {
    for (std::size_t i = 0; i < flight->host.size(); ++i) {
      const at::Tensor& host = flight->host[i];
      flight->device.push_back(stages_.empty() ? host.to(torch::Device(torch::kCUDA, device_),
                                                         /*non_blocking=*/true)
                                               : stages_[i].apply(host));
    }
    flight->copied.record(stream);
    flight->recorded = true;
  } catch (...) {
    // Work already enqueued may still read the host slot: it goes back only after that work
    // (the flight's destructor waits for its stream).
    flight.reset();
    throw;
  }
  flight->host_seconds = host_work.seconds();
  const std::lock_guard lock(mutex_);
  timings_.stage_host_seconds += flight->host_seconds;
  ++timings_.prepared;
  return flight;
}

void DeviceTransfer::count_finished(InFlight& finished) {
  if (finished.counted) return;
  finished.counted = true;
  ++timings_.gpu_batches;
  // `copied` cannot pass before the host has enqueued everything: the GPU's own share is what
  // came after that.
  const double elapsed = 1e-3 * finished.started.elapsed_time(finished.copied);
  timings_.gpu_seconds += std::max(0.0, elapsed - finished.host_seconds);
}

TransferTimings DeviceTransfer::timings() const {
  const std::lock_guard lock(mutex_);
  return timings_;
}

std::optional<Batch> DeviceTransfer::take_next() {
  keep_one_copying();
  const Stopwatch loader_wait;
  std::optional<Batch> batch = epoch_.next();
  const std::lock_guard lock(mutex_);
  timings_.loader_wait_seconds += loader_wait.seconds();
  return batch;
}

void DeviceTransfer::start_next() {
  std::optional<Batch> batch = take_next();
  ahead_ = batch ? enqueue(std::move(*batch), 0) : nullptr;
  ended_ = ahead_ == nullptr;
}

void DeviceTransfer::release_finished() {
  const std::lock_guard lock(mutex_);
  while (!copying_.empty() && copying_.front()->copied.query()) {
    count_finished(*copying_.front());
    copying_.pop_front();
  }
}

std::vector<at::Tensor> DeviceTransfer::hand_out(InFlight& ready) {
  {
    const std::lock_guard lock(mutex_);
    ++timings_.batches;
  }
  const c10::cuda::CUDAStream consumer = c10::cuda::getCurrentCUDAStream(device_);
  ready.copied.block(consumer);
  for (const at::Tensor& tensor : ready.device) {
    // The copies were allocated on a copy stream but are used on the consumer's.
    if (tensor.is_cuda()) {
      c10::cuda::CUDACachingAllocator::recordStream(tensor.storage().data_ptr(), consumer);
    }
  }
  std::vector<at::Tensor> out = std::move(ready.device);
  ready.device.clear();
  return out;
}

std::optional<std::vector<at::Tensor>> DeviceTransfer::next() {
  const Stopwatch waiting;
  std::optional<std::vector<at::Tensor>> out = threaded_ ? next_prepared() : next_copied();
  const std::lock_guard lock(mutex_);
  timings_.consumer_wait_seconds += waiting.seconds();
  return out;
}

std::optional<std::vector<at::Tensor>> DeviceTransfer::next_copied() {
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

std::optional<std::vector<at::Tensor>> DeviceTransfer::next_prepared() {
  release_finished();
  std::optional<std::unique_ptr<InFlight>> ready = preparers_->next();
  if (!ready) return std::nullopt;
  InFlight* flight = ready->get();
  {
    // Kept until its copy has finished: a thread taking the next batch gives back only the
    // slots of batches handed out before this one.
    const std::lock_guard lock(mutex_);
    copying_.push_back(std::move(*ready));
  }
  return hand_out(*flight);
}

}  // namespace ffcv::torch_adapter
