// The crop-resize-flip kernel (crop_resize.hpp). A block row of threads covers output pixels of
// one job (blockIdx.y); each thread walks the source pixels its output pixel draws from.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "crop_resize.hpp"

namespace ffcv::torch_adapter::detail {
namespace {

// The source pixels [first, last) that output pixel `o` of an axis draws from, with their
// weights through weight(i). `start` and `length` give the window along the axis, `scale` =
// length / output size.
struct Taps {
  int first = 0, last = 0;
  float a = 0.f, b = 0.f;  // area: the covered extent [a, b)
  float fraction = 0.f;    // linear: weight of the second tap
  bool area = false;

  __device__ float weight(int i) const {
    if (area) return fminf(b, float(i + 1)) - fmaxf(a, float(i));
    return i == first ? 1.f - fraction : fraction;
  }
};

__device__ Taps taps(int start, int length, float scale, int o, bool area_filter) {
  Taps t;
  if (area_filter && scale >= 1.f) {
    t.area = true;
    t.a = start + o * scale;
    t.b = fminf(t.a + scale, float(start + length));
    t.first = static_cast<int>(floorf(t.a));
    t.last = min(static_cast<int>(ceilf(t.b)), start + length);
    return t;
  }
  float s = start + (o + 0.5f) * scale - 0.5f;
  s = fminf(fmaxf(s, float(start)), float(start + length - 1));
  t.first = static_cast<int>(floorf(s));
  t.fraction = s - t.first;
  t.last = min(t.first + 2, start + length);
  if (t.last == t.first + 1) t.fraction = 0.f;
  return t;
}

__global__ void crop_resize_kernel(const CropJob* __restrict__ jobs, std::uint8_t* __restrict__ out,
                                   int out_height, int out_width, bool area) {
  const CropJob job = jobs[blockIdx.y];
  const int pixels = out_height * out_width;
  const float scale_x = float(job.width) / out_width;
  const float scale_y = float(job.height) / out_height;
  const std::size_t pitch = std::size_t(job.source_width) * 3;
  std::uint8_t* target = out + std::size_t(job.out_index) * pixels * 3;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x) {
    const int oy = p / out_width, ox = p % out_width;
    const int sx = job.flip ? out_width - 1 - ox : ox;
    const Taps ty = taps(job.top, job.height, scale_y, oy, area);
    const Taps tx = taps(job.left, job.width, scale_x, sx, area);
    float r = 0.f, g = 0.f, bl = 0.f, total = 0.f;
    for (int y = ty.first; y < ty.last; ++y) {
      const float wy = ty.weight(y);
      const std::uint8_t* row = job.source + std::size_t(y) * pitch;
      for (int x = tx.first; x < tx.last; ++x) {
        const float w = wy * tx.weight(x);
        r += w * row[3 * x];
        g += w * row[3 * x + 1];
        bl += w * row[3 * x + 2];
        total += w;
      }
    }
    const float inv = total > 0.f ? 1.f / total : 0.f;
    std::uint8_t* pixel = target + std::size_t(p) * 3;
    pixel[0] = static_cast<std::uint8_t>(fminf(fmaxf(r * inv + 0.5f, 0.f), 255.f));
    pixel[1] = static_cast<std::uint8_t>(fminf(fmaxf(g * inv + 0.5f, 0.f), 255.f));
    pixel[2] = static_cast<std::uint8_t>(fminf(fmaxf(bl * inv + 0.5f, 0.f), 255.f));
  }
}

}  // namespace

void crop_resize_cuda(const CropJob* jobs, int count, std::uint8_t* out, int out_height,
                      int out_width, bool area, void* stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const int pixels = out_height * out_width;
  const int blocks_x = (pixels + kThreads - 1) / kThreads;
  // One grid row per job, at most 65,535 rows a launch.
  constexpr int kMaxRows = 65535;
  for (int first = 0; first < count; first += kMaxRows) {
    const int rows = count - first < kMaxRows ? count - first : kMaxRows;
    const dim3 grid(static_cast<unsigned>(blocks_x < 64 ? blocks_x : 64),
                    static_cast<unsigned>(rows));
    crop_resize_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs + first, out, out_height, out_width, area);
  }
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("decode_crops: CUDA kernel launch failed: ") +
                             cudaGetErrorString(status));
  }
}

}  // namespace ffcv::torch_adapter::detail
