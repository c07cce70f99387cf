// TransferTimings: where a device feed's batches spent their time (DeviceTransfer::timings,
// BatchFeed::timings), so that a caller can say what bounds it: the loader's workers, the host
// work of the copies and stages (nvJPEG's parsing for decode_crops), the GPU, or the caller.
// Sums over the batches, in seconds; all zero for a feed on the CPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ffcv::torch_adapter {

struct TransferTimings {
  std::uint64_t batches = 0;         // handed out by next()
  std::uint64_t prepared = 0;        // taken from the loader and enqueued
  std::uint64_t gpu_batches = 0;     // whose GPU work has finished and is counted
  double loader_wait_seconds = 0;    // preparing: waiting for the loader's next host batch
  double stage_host_seconds = 0;     // preparing: host time enqueueing the copies and stages
  double gpu_seconds = 0;            // copy stream: from the end of that enqueueing to ready
  double consumer_wait_seconds = 0;  // next(): the caller waiting for a batch
  int preparers = 1;  // threads preparing batches side by side (their host work overlaps)

  // Per batch, in milliseconds, each over the batches it is counted for.
  double loader_wait_ms() const { return per(loader_wait_seconds, prepared); }
  double stage_host_ms() const { return per(stage_host_seconds, prepared); }
  double gpu_ms() const { return per(gpu_seconds, gpu_batches); }
  double consumer_wait_ms() const { return per(consumer_wait_seconds, batches); }

  TransferTimings& operator+=(const TransferTimings& other) {
    batches += other.batches;
    prepared += other.prepared;
    gpu_batches += other.gpu_batches;
    loader_wait_seconds += other.loader_wait_seconds;
    stage_host_seconds += other.stage_host_seconds;
    gpu_seconds += other.gpu_seconds;
    consumer_wait_seconds += other.consumer_wait_seconds;
    preparers = std::max(preparers, other.preparers);
    return *this;
  }
  // What was added between an earlier reading and this one.
  TransferTimings since(const TransferTimings& earlier) const {
    return {batches - earlier.batches,
            prepared - earlier.prepared,
            gpu_batches - earlier.gpu_batches,
            loader_wait_seconds - earlier.loader_wait_seconds,
            stage_host_seconds - earlier.stage_host_seconds,
            gpu_seconds - earlier.gpu_seconds,
            consumer_wait_seconds - earlier.consumer_wait_seconds,
            preparers};
  }

 private:
  static double per(double seconds, std::uint64_t count) {
    return count == 0 ? 0.0 : 1e3 * seconds / static_cast<double>(count);
  }
};

// What bounds a device feed, from its timings and the wall time of the batches they cover:
//   consumer  the caller waited for batches under a tenth of the time: the feed keeps up;
//   workers   the preparing side waited for the loader more than it worked itself, and more
//             than the GPU's work per batch took: the CPU workers;
//   host      the host work of the copies and stages (nvJPEG's parsing) took longest;
//   gpu       the feed's GPU work per batch (decode engines, kernels, waits behind the training
//             step) took longest.
// Host and GPU work per batch are divided by `preparers`: threads preparing side by side
// overlap them.
struct FeedBound {
  std::string bottleneck;  // "consumer", "workers", "host" or "gpu"
  std::string summary;     // one sentence with the per-batch figures
  std::vector<std::string> advice;
};
FeedBound feed_bound(const TransferTimings& timings, double wall_seconds);

}  // namespace ffcv::torch_adapter
