// feed_bound (ffcv/torch/transfer_timings.hpp): which part of a device feed bounds it, from the
// per-batch timings, with preparing threads side by side counted.
#include "ffcv/torch/transfer_timings.hpp"

#include <catch2/catch.hpp>

using ffcv::torch_adapter::feed_bound;
using ffcv::torch_adapter::TransferTimings;

namespace {

// 100 batches over `wall` seconds; the rest per batch, in milliseconds.
TransferTimings per_batch(double loader_ms, double host_ms, double gpu_ms, double waiting_ms,
                          int preparers = 1) {
  TransferTimings t;
  t.batches = t.prepared = t.gpu_batches = 100;
  t.loader_wait_seconds = loader_ms * 0.1;
  t.stage_host_seconds = host_ms * 0.1;
  t.gpu_seconds = gpu_ms * 0.1;
  t.consumer_wait_seconds = waiting_ms * 0.1;
  t.preparers = preparers;
  return t;
}

}  // namespace

TEST_CASE("feed_bound names the part that bounds a device feed", "[torch][feed_bound]") {
  // Every batch takes 40 ms of wall time (4 s for 100).
  CHECK(feed_bound(per_batch(1, 10, 10, 2), 4.0).bottleneck == "consumer");
  CHECK(feed_bound(per_batch(30, 5, 8, 30), 4.0).bottleneck == "workers");
  CHECK(feed_bound(per_batch(1, 35, 20, 30), 4.0).bottleneck == "host");
  CHECK(feed_bound(per_batch(1, 10, 35, 30), 4.0).bottleneck == "gpu");
  // Two threads preparing side by side halve the host work that counts against a batch.
  CHECK(feed_bound(per_batch(20, 35, 5, 30, 2), 4.0).bottleneck == "workers");
  const auto bound = feed_bound(per_batch(1, 35, 20, 30), 4.0);
  CHECK_THAT(bound.summary, Catch::Contains("every 40.0 ms") && Catch::Contains("35.0 ms of host"));
  CHECK_FALSE(bound.advice.empty());
}

TEST_CASE("TransferTimings add up and subtract an earlier reading", "[torch][feed_bound]") {
  TransferTimings a = per_batch(1, 2, 3, 4), b = per_batch(1, 1, 1, 1, 2);
  TransferTimings sum = a;
  sum += b;
  CHECK(sum.batches == 200);
  CHECK(sum.preparers == 2);
  const TransferTimings back = sum.since(a);
  CHECK(back.batches == 100);
  CHECK(back.stage_host_seconds == Approx(0.1));
  // Each figure per batch over the batches it is counted for.
  TransferTimings early;
  early.batches = 10;
  early.prepared = 12;
  early.gpu_batches = 8;
  early.stage_host_seconds = 0.12;
  early.gpu_seconds = 0.08;
  early.consumer_wait_seconds = 0.1;
  CHECK(early.stage_host_ms() == Approx(10.0));
  CHECK(early.gpu_ms() == Approx(10.0));
  CHECK(early.consumer_wait_ms() == Approx(10.0));
  CHECK(TransferTimings{}.gpu_ms() == 0.0);
}
