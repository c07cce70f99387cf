// DeviceTransfer: batches copied to a CUDA device on a dedicated stream, one batch ahead, so
// the copy of batch b+1 overlaps the training step on batch b.
//
// Each output either is copied as it is, or runs its DeviceStage on that stream (to_device, then
// e.g. to_torch_image and normalize), so the device steps overlap training too. An output whose
// stage has no to_device stays a host tensor viewing its batch slot: it holds that slot until it
// is dropped, and the transfer itself holds two, so keep such tensors no longer than a step
// (or clone them) unless batches_ahead leaves room.
//
// next() returns batch b's outputs as device tensors, ordered after the copy on the caller's
// current stream (an event, not a host wait), and starts copying batch b+1 if the loader has it
// ready; otherwise the next call waits for it, so the caller launches step b before that wait,
// and an epoch's first step waits for one batch, not two. Construction does not wait.
// The copy stream is the constructing thread's, the same for every epoch on that device, so the
// caching allocator reuses the device memory of the last epoch's copies. The host batch is
// released as soon as its copy has finished on the GPU, never before, so a pinned slot is not
// overwritten while a non-blocking copy still reads it (FFCV issue #37).
//
// Preparing on a thread: when a stage works on the host per batch (DeviceStage::works_on_host,
// e.g. decode_crops, whose nvJPEG calls parse every JPEG of the batch on the host), batch b+1
// is taken from the loader and its stages enqueued by a thread of the transfer's own, so that
// host work never delays the caller's launch of step b. next() then only waits for a prepared
// batch (and the loader's end or error) and orders it on the caller's stream. The rules above
// hold unchanged (at most one batch prepared ahead, two host slots held, errors in order), but
// a failure ends the epoch: every later next() throws it again. Destruction stops the epoch
// (EpochIterator::stop) and joins the thread.
//
// Errors: a batch that fails (the loader's error for a sample, a failed copy or stage) is
// thrown by the next() that would have returned it, never earlier: when the copy of batch b+1
// fails while next() hands out batch b, batch b is still returned and the error is thrown by
// the following call. Built only with CUDA.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ffcv/loader.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/torch/device_stage.hpp"

namespace ffcv::torch_adapter {

class DeviceTransfer {
 public:
  // Takes over `epoch`; every output is copied to CUDA device `device`.
  DeviceTransfer(EpochIterator epoch, int device);
  // The same, with one stage per loader output, in the loader's output order.
  DeviceTransfer(EpochIterator epoch, int device, std::vector<DeviceStage> stages);
  ~DeviceTransfer();

  // Batch b's outputs on the device, or nullopt at the end of the epoch.
  std::optional<std::vector<at::Tensor>> next();

 private:
  struct InFlight;
  // Takes the loader's next batch and enqueues its copy and stages; null at the end.
  std::unique_ptr<InFlight> prepare();
  void start_next();
  void release_finished();
  // The preparing thread's loop (works_on_host stages) and next()'s side of it.
  void prepare_loop();
  std::optional<std::vector<at::Tensor>> next_prepared();
  std::vector<at::Tensor> hand_out(InFlight& ready);

  EpochIterator epoch_;
  int device_;
  std::vector<DeviceStage> stages_;                // empty: plain copies
  std::unique_ptr<InFlight> ahead_;                // the batch being copied for the next call
  bool ended_ = false;                             // the loader has no more batches
  std::exception_ptr deferred_error_;              // batch b+1's failure, thrown next call
  std::deque<std::unique_ptr<InFlight>> copying_;  // handed out, host slot not yet released
  struct StreamHolder;
  std::unique_ptr<StreamHolder> stream_;

  // With a preparing thread: `copying_` is shared with it under `mutex_`.
  bool threaded_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unique_ptr<InFlight> prepared_;  // ready for the next call
  std::exception_ptr thread_error_;     // the preparing thread's failure, after its good batches
  bool stopping_ = false;
  std::thread preparer_;
};

}  // namespace ffcv::torch_adapter
