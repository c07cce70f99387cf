// ffcv::resize_rgb against OpenCV's cv::resize on RandomResizedCrop-like geometries of a
// 500x375 natural-like RGB image, one thread: OpenCV runs with cv::setNumThreads(0) (serial, as
// in cpu-limits.md; its own SIMD dispatch stays on). Both write into a preallocated output.
//   Fixed/<kind>/<geometry>: one geometry, repeated (L1/L2-hot).
//   RrcMix/<kind>/<size>: 256 torchvision-style crops (scale 0.08-1, ratio 3/4-4/3) cycled, so
//     the mix of shrinking, growing and mixed cases is the training one.
// <kind> is ours_area, opencv_area, ours_linear or opencv_linear. Compare pairs by their time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "ffcv/image/resize.hpp"

namespace {

constexpr int kWidth = 500;
constexpr int kHeight = 375;

// Smooth gradients, waves and noise (the content does not change the cost of either resampler).
const std::vector<std::uint8_t>& image() {
  static const std::vector<std::uint8_t> pixels = [] {
    std::vector<std::uint8_t> p(static_cast<std::size_t>(kWidth) * kHeight * 3);
    std::mt19937 rng(1);
    std::normal_distribution<double> noise(0, 10);
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        const double v[3] = {40 + 150.0 * x / kWidth + 30 * std::sin(y / 23.0),
                             200 - 120.0 * y / kHeight + 25 * std::cos(x / 17.0 + y / 31.0),
                             128 + 60 * std::sin((x + 2 * y) / 41.0)};
        for (int c = 0; c < 3; ++c) {
          p[(static_cast<std::size_t>(y) * kWidth + x) * 3 + c] =
              static_cast<std::uint8_t>(std::clamp(std::lround(v[c] + noise(rng)), 0L, 255L));
        }
      }
    }
    return p;
  }();
  return pixels;
}

struct Crop {
  int x, y, w, h;
};

struct Geometry {
  const char* name;
  Crop crop;
  int size;  // square output
};

const Geometry kGeometries[] = {
    {"crop300x260_to224", {100, 60, 300, 260}, 224},
    {"crop300x260_to192", {100, 60, 300, 260}, 192},
    {"crop300x260_to160", {100, 60, 300, 260}, 160},
    {"full500x375_to224", {0, 0, 500, 375}, 224},
    {"center328_to224", {86, 23, 328, 328}, 224},  // validation: 224/256 of the short side
};

enum Kind { kOursArea, kOpenCvArea, kOursLinear, kOpenCvLinear };
const char* const kKindNames[] = {"ours_area", "opencv_area", "ours_linear", "opencv_linear"};

// torchvision RandomResizedCrop parameters (10 tries, then the centre fallback).
std::vector<Crop> rrc_crops(int count) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4), std::log(4.0 / 3));
  std::vector<Crop> crops;
  while (static_cast<int>(crops.size()) < count) {
    Crop crop{0, 0, kWidth, kHeight};
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double area = scale(rng) * kWidth * kHeight;
      const double ratio = std::exp(log_ratio(rng));
      const int w = static_cast<int>(std::nearbyint(std::sqrt(area * ratio)));
      const int h = static_cast<int>(std::nearbyint(std::sqrt(area / ratio)));
      if (w > 0 && h > 0 && w <= kWidth && h <= kHeight) {
        crop = {static_cast<int>(rng() % (kWidth - w + 1)),
                static_cast<int>(rng() % (kHeight - h + 1)), w, h};
        break;
      }
    }
    crops.push_back(crop);
  }
  return crops;
}

void resize_once(Kind kind, const Crop& crop, int size, std::uint8_t* out,
                 std::vector<std::uint8_t>& scratch) {
  const std::uint8_t* pixels = image().data();
  if (kind == kOursArea || kind == kOursLinear) {
    const ffcv::ResizeSource source{pixels,
                                    kWidth,
                                    kHeight,
                                    kWidth * 3u,
                                    static_cast<double>(crop.x),
                                    static_cast<double>(crop.y),
                                    static_cast<double>(crop.w),
                                    static_cast<double>(crop.h)};
    ffcv::resize_rgb(source, out, size, size,
                     kind == kOursArea ? ffcv::Interpolation::kArea : ffcv::Interpolation::kLinear,
                     scratch);
    return;
  }
  const cv::Mat whole(kHeight, kWidth, CV_8UC3, const_cast<std::uint8_t*>(pixels));
  cv::Mat target(size, size, CV_8UC3, out);
  cv::resize(whole(cv::Rect(crop.x, crop.y, crop.w, crop.h)), target, target.size(), 0, 0,
             kind == kOpenCvArea ? cv::INTER_AREA : cv::INTER_LINEAR);
}

void BM_Fixed(benchmark::State& state) {
  const Kind kind = static_cast<Kind>(state.range(0));
  const Geometry& g = kGeometries[state.range(1)];
  std::vector<std::uint8_t> out(static_cast<std::size_t>(g.size) * g.size * 3), scratch;
  for (auto _ : state) {
    resize_once(kind, g.crop, g.size, out.data(), scratch);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(kKindNames[kind]) + " " + g.name);
}

void BM_RrcMix(benchmark::State& state) {
  const Kind kind = static_cast<Kind>(state.range(0));
  const int size = static_cast<int>(state.range(1));
  const std::vector<Crop> crops = rrc_crops(256);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(size) * size * 3), scratch;
  std::size_t i = 0;
  for (auto _ : state) {
    resize_once(kind, crops[i++ % crops.size()], size, out.data(), scratch);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(kKindNames[kind]) + " rrc_mix_to" + std::to_string(size));
}

// A fractional crop (our resampler only: OpenCV has no such region).
void BM_OursFractional(benchmark::State& state) {
  std::vector<std::uint8_t> out(224 * 224 * 3), scratch;
  const ffcv::ResizeSource source{image().data(), kWidth, kHeight, kWidth * 3u,
                                  100.37,         60.81,  300.42,  259.77};
  for (auto _ : state) {
    ffcv::resize_rgb(source, out.data(), 224, 224, ffcv::Interpolation::kArea, scratch);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_Fixed)->ArgsProduct({{kOursArea, kOpenCvArea, kOursLinear, kOpenCvLinear},
                                  {0, 1, 2, 3, 4}});
BENCHMARK(BM_RrcMix)->ArgsProduct({{kOursArea, kOpenCvArea, kOursLinear, kOpenCvLinear},
                                   {160, 192, 224}});
BENCHMARK(BM_OursFractional);

int main(int argc, char** argv) {
  cv::setNumThreads(0);  // OpenCV serial, like our resampler (one call = one thread)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
