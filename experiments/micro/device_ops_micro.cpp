// Micro-benchmarks of the device steps on a whole batch of 64 uint8 images of 224x224x3, on the
// GPU when one is visible (each iteration ends with a device synchronisation), else on the CPU
// with one thread:
//   NormalizeLookup/<32|16>: the device `normalize` step (float32 / float16 output): one pass
//     through the CPU step's per-channel tables, one kernel on the GPU.
//   NormalizeArithmetic/<32|16>: the baseline a LibTorch user writes, and what the trainer ran
//     before the device steps: x.float(), subtract the mean, multiply by 1/std, cast.
//   ToTorchImage/<channels_last>: to_torch_image as a view (1) or a contiguous NCHW copy (0).
// bytes/s counts the uint8 input; the ratio of the first two is the figure to read.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <vector>

#include "ffcv/torch/device_stage.hpp"

namespace {

using namespace ffcv;

constexpr std::int64_t kBatch = 64, kSide = 224;
const std::vector<double> kMean{123.675, 116.28, 103.53}, kStd{58.395, 57.12, 57.375};

at::Device bench_device() {
  return torch::cuda::is_available() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
}

const at::Tensor& batch() {
  static const at::Tensor images = [] {
    torch::manual_seed(0);
    return torch::randint(0, 256, {kBatch, kSide, kSide, 3}, torch::kUInt8).to(bench_device());
  }();
  return images;
}

void finish(benchmark::State& state) {
  if (bench_device().is_cuda()) torch::cuda::synchronize();
  state.SetBytesProcessed(state.iterations() * batch().numel());
  state.SetLabel(bench_device().str());
}

torch_adapter::DeviceStage stage(const std::string& step) {
  const TensorState image{DType::parse("|u1"),
                          {static_cast<std::uint64_t>(kSide), static_cast<std::uint64_t>(kSide), 3},
                          Device::kCpu};
  return torch_adapter::DeviceStage("image", image, std::vector<std::string>{step});
}

void NormalizeLookup(benchmark::State& state) {
  const bool half = state.range(0) == 16;
  const auto normalize =
      stage("normalize:mean=[123.675,116.28,103.53],std=[58.395,57.12,57.375],dtype=" +
            std::string(half ? "float16" : "float32"));
  for (auto _ : state) {
    at::Tensor out = normalize.apply(batch());
    if (bench_device().is_cuda()) torch::cuda::synchronize();
    benchmark::DoNotOptimize(out.data_ptr());
  }
  finish(state);
}

void NormalizeArithmetic(benchmark::State& state) {
  const at::ScalarType type = state.range(0) == 16 ? at::kHalf : at::kFloat;
  const at::Tensor mean = torch::tensor(kMean, torch::kFloat32).to(bench_device());
  const at::Tensor inv_std = (1.0 / torch::tensor(kStd, torch::kFloat32)).to(bench_device());
  for (auto _ : state) {
    at::Tensor out = ((batch().to(torch::kFloat32) - mean) * inv_std).to(type);
    if (bench_device().is_cuda()) torch::cuda::synchronize();
    benchmark::DoNotOptimize(out.data_ptr());
  }
  finish(state);
}

void ToTorchImage(benchmark::State& state) {
  const auto layout =
      stage(std::string("to_torch_image:channels_last=") + (state.range(0) ? "true" : "false"));
  for (auto _ : state) {
    at::Tensor out = layout.apply(batch());
    if (bench_device().is_cuda()) torch::cuda::synchronize();
    benchmark::DoNotOptimize(out.data_ptr());
  }
  finish(state);
}

BENCHMARK(NormalizeLookup)->Arg(32)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NormalizeArithmetic)->Arg(32)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ToTorchImage)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);  // per core on the CPU; the GPU runs are one stream either way
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
