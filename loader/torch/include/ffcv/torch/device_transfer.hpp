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
// Preparing on threads: when a stage works on the host per batch (DeviceStage::works_on_host,
// e.g. decode_crops, whose nvJPEG calls parse every JPEG of the batch on the host and wait for
// the JPEG engines), batches are taken from the loader and their stages enqueued by
// kPreparingThreads threads of the transfer's own, each on a copy stream of its own, so that
// host work never delays the caller's launch of step b and two batches' host work and waits
// overlap. The threads take batches in the loader's order, one at a time, and next() hands
// them out in that order, ordered on the caller's stream. At most kPreparingThreads batches
// are taken and not yet handed out, so the transfer holds at most kPreparingThreads + 1 host
// slots once the oldest copy has finished. Errors keep their order (the batches before a
// failed one are still handed out), but a failure ends the epoch: every later next() throws it
// again. Destruction stops the epoch (EpochIterator::stop) and joins the threads.
//
// Timings (timings()): where the batches' time went, so a caller can tell what bounds the feed:
// the loader's workers (the preparing side waiting for host batches), the host work of the
// copies and stages (nvJPEG's parsing for decode_crops), the GPU (copy stream work, waits
// behind the training step included) or the caller itself (next() seldom waits). The copy
// streams have high priority: their kernels (decode_crops' crops, normalize) run between the
// training step's blocks instead of after the whole step.
//
// Errors: a batch that fails (the loader's error for a sample, a failed copy or stage) is
// thrown by the next() that would have returned it, never earlier: when the copy of batch b+1
// fails while next() hands out batch b, batch b is still returned and the error is thrown by
// the following call. Built only with CUDA.
#pragma once

#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ffcv/loader.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/torch/device_stage.hpp"
#include "ffcv/torch/transfer_timings.hpp"
#include "ffcv/util/ordered_preparers.hpp"

namespace ffcv::torch_adapter {

class DeviceTransfer {
 public:
  // Threads preparing batches when a stage works on the host.
  static constexpr int kPreparingThreads = 2;

  // Takes over `epoch`; every output is copied to CUDA device `device`.
  DeviceTransfer(EpochIterator epoch, int device);
  // The same, with one stage per loader output, in the loader's output order.
  DeviceTransfer(EpochIterator epoch, int device, std::vector<DeviceStage> stages);
  ~DeviceTransfer();

  // Batch b's outputs on the device, or nullopt at the end of the epoch.
  std::optional<std::vector<at::Tensor>> next();
  // So far; a batch's GPU time counts once its host slot has gone back.
  TransferTimings timings() const;

 private:
  struct InFlight;
  // Gives back the host slots of handed-out batches but the newest, waiting for their copies.
  void keep_one_copying();
  // That, then the loader's next batch (nullopt at the end), its wait counted.
  std::optional<Batch> take_next();
  // Enqueues the copy and stages of `batch` on copy stream `stream_index`.
  std::unique_ptr<InFlight> enqueue(Batch batch, std::size_t stream_index);
  void start_next();
  void release_finished();
  // Adds a finished batch's GPU time (mutex_ held).
  void count_finished(InFlight& finished);
  // next()'s side of the preparing threads.
  std::optional<std::vector<at::Tensor>> next_prepared();
  std::optional<std::vector<at::Tensor>> next_copied();  // without the threads
  std::vector<at::Tensor> hand_out(InFlight& ready);

  EpochIterator epoch_;
  int device_;
  std::vector<DeviceStage> stages_;                // empty: plain copies
  std::unique_ptr<InFlight> ahead_;                // the batch being copied for the next call
  bool ended_ = false;                             // the loader has no more batches
  std::exception_ptr deferred_error_;              // batch b+1's failure, thrown next call
  std::deque<std::unique_ptr<InFlight>> copying_;  // handed out, host slot not yet released
  struct StreamHolder;
  std::unique_ptr<StreamHolder> streams_;  // the copy streams: one, or one per preparing thread

  // With preparing threads: `copying_` and `timings_` are shared with them under `mutex_`.
  bool threaded_ = false;
  mutable std::mutex mutex_;
  TransferTimings timings_;  // under mutex_
  std::unique_ptr<OrderedPreparers<Batch, std::unique_ptr<InFlight>>> preparers_;
};

}  // namespace ffcv::torch_adapter
