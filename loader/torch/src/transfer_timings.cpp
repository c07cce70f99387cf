#include "ffcv/torch/transfer_timings.hpp"

#include <algorithm>
#include <cstdio>

namespace ffcv::torch_adapter {

FeedBound feed_bound(const TransferTimings& timings, double wall_seconds) {
  const double period =
      1e3 * wall_seconds / std::max<double>(1, static_cast<double>(timings.batches));
  const double side_by_side = std::max(1, timings.preparers);
  const double loader = timings.loader_wait_ms();
  const double host = timings.stage_host_ms() / side_by_side;
  const double gpu = timings.gpu_ms() / side_by_side;
  const double waiting = timings.consumer_wait_ms();
  char figures[300];
  std::snprintf(figures, sizeof figures,
                "per batch (every %.1f ms): the consumer waited %.1f ms; preparing: %.1f ms "
                "waiting for the loader, %.1f ms of host work in the stages; %.1f ms of GPU work "
                "(host and GPU work over %d threads side by side)",
                period, waiting, loader, host, gpu, std::max(1, timings.preparers));
  FeedBound bound;
  if (waiting < 0.1 * period) {
    bound.bottleneck = "consumer";
    bound.summary = std::string("the consumer bounds throughput, the feed keeps up: ") + figures;
    bound.advice = {"speed up the training step, or train more models on the same feed"};
  } else if (loader >= host && loader >= gpu) {
    bound.bottleneck = "workers";
    bound.summary = std::string("the loader's CPU workers bound the feed: ") + figures;
    bound.advice = {
        "give the loader more cores or workers (--num-workers)",
        "on the GPU image path the workers still resize raw samples: images stored as JPEG "
        "(ffcv write --compress-probability 1) move that work to the GPU's decoder",
        "with --image-decode cpu, try --image-decode gpu: the workers then only cut JPEG bytes"};
  } else if (host >= gpu) {
    bound.bottleneck = "host";
    bound.summary = std::string(
                        "host work of the device stages (nvJPEG's parsing, enqueueing) bounds the "
                        "feed: ") +
                    figures;
    bound.advice = {
        "keep that thread's core free: pin the workers to the other cores, or use one worker "
        "fewer",
        "larger batches spread the per-batch host work over more samples"};
  } else {
    bound.bottleneck = "gpu";
    bound.summary = std::string("the feed's GPU work bounds it: ") + figures;
    bound.advice = {
        "the GPU's JPEG engines or kernels are saturated, or wait behind the training step: "
        "store part of the images raw (--compress-probability below 1), which the workers "
        "resize, or decode on the CPU where cores are free (--image-decode cpu)",
        "smaller stored images (ffcv write --max-resolution) decode faster"};
  }
  return bound;
}

}  // namespace ffcv::torch_adapter
