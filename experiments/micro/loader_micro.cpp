// Micro-benchmarks of the loader's hot paths: keyed random numbers, epoch orders, an operation
// and a whole-loader epoch over an in-memory file. `build/bin/ffcv_micro_loader` runs them all;
// --benchmark_filter=Order runs one family.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/order/traversal_order.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/counter_random.hpp"

namespace {

using namespace ffcv;

void BM_Philox(benchmark::State& state) {
  std::uint64_t i = 0, sink = 0;
  for (auto _ : state) sink += random_u64(7, 1, i++, 0);
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Philox);

// ImageNet-sized: 1.28M samples, ~400 per page.
std::vector<std::uint64_t> imagenet_pages() {
  std::vector<std::uint64_t> pages(1281167);
  for (std::uint64_t i = 0; i < pages.size(); ++i) pages[i] = i / 400;
  return pages;
}

void BM_Order(benchmark::State& state) {
  OrderOptions options;
  options.kind = static_cast<OrderKind>(state.range(0));
  options.batch_size = 512;
  const TraversalOrder order(options, imagenet_pages());
  std::uint64_t epoch = 0;
  for (auto _ : state) benchmark::DoNotOptimize(order.epoch_order(epoch++));
  state.SetItemsProcessed(state.iterations() * 1281167);
  state.SetLabel(order_kind_name(options.kind));
}
BENCHMARK(BM_Order)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_FlipOperation(benchmark::State& state) {
  auto flip = OpRegistry::global().make_operation("random_horizontal_flip",
                                                  OpParams().set("probability", 1.0));
  const TensorState image{DType::parse("|u1"), {224, 224, 3}};
  flip->declare(image);
  std::vector<std::uint8_t> in(image.byte_size(), 7), out(image.byte_size());
  SampleContext context;
  for (auto _ : state) {
    flip->apply(in.data(), out.data(), {}, context);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * image.byte_size());
}
BENCHMARK(BM_FlipOperation);

// One epoch of the loader over 20,000 samples of 3 KiB (raw NDArray + int), mmap, sequential.
void BM_LoaderEpoch(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "ffcv-micro-loader.beton").string();
  constexpr std::uint64_t kSamples = 20000;
  if (!std::filesystem::exists(path)) {
    struct Source final : SampleSource {
      std::uint64_t size() const override { return kSamples; }
      std::vector<FieldValue> load(std::uint64_t i) const override {
        return {NdArray{DType::parse("|u1"), {3072}, std::vector<std::uint8_t>(3072, i & 255)},
                static_cast<std::int64_t>(i)};
      }
    };
    DatasetWriter(path, {{"x", std::make_shared<NdArrayField>(DType::parse("|u1"),
                                                              std::vector<std::uint64_t>{3072})},
                         {"y", std::make_shared<IntField>()}})
        .write(Source());
  }
  LoaderOptions options;
  options.batch_size = 256;
  options.num_workers = static_cast<int>(state.range(0));
  Loader loader(path, {}, options);
  std::uint64_t epoch = 0, samples = 0;
  for (auto _ : state) {
    auto it = loader.epoch(epoch++);
    while (auto batch = it.next()) samples += batch->size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
}
BENCHMARK(BM_LoaderEpoch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
