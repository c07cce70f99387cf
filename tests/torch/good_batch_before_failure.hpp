// The batch before a failing one reaches the caller: BatchFeed (and on CUDA its DeviceTransfer,
// which starts copying batch b+1 while handing out batch b) returns batch 0 whole, and the
// failure of sample 9 in batch 1 is thrown by the following call, naming the sample.
#pragma once

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "fails_for.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/torch/batch_feed.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "test_support.hpp"

namespace ffcv::test {

inline void check_good_batch_before_failure(at::Device device) {
  TempDir dir;
  const std::string path = dir.file("values.beton");
  DatasetWriter(path, {{"value", std::make_shared<IntField>()}})
      .write(FunctionSource(64, [](std::uint64_t i) {
        return std::vector<FieldValue>{static_cast<std::int64_t>(i)};
      }));
  LoaderOptions options;
  options.batch_size = 8;
  options.num_workers = 2;
  options.batches_ahead = 3;
  options.default_pipelines = false;
  if (device.is_cuda()) options.allocator = torch_adapter::pinned_allocator();
  Loader loader(
      path, {{"value", "value", nullptr, {std::make_shared<FailsFor>(std::set<std::uint64_t>{9})}}},
      options);
  torch_adapter::BatchFeed feed(loader.epoch(0), device, {});
  // Let the workers finish batch 0 and fail batch 1 before the first call, so that the call
  // handing out batch 0 finds batch 1 ready (and failed).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto first = feed.next();
  REQUIRE(first.has_value());
  CHECK(torch::equal((*first)[0].cpu().flatten(), torch::arange(8, torch::kInt64)));
  CHECK_THROWS_WITH(feed.next(), Catch::Contains("sample 9") && Catch::Contains("planted failure"));
}

}  // namespace ffcv::test
