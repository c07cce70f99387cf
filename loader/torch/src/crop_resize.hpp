// The CUDA kernel of decode_crops: for each job, cut a window out of a decoded RGB frame, resize
// it to the output size and mirror it if asked, in one pass, writing uint8 [N, H, W, 3].
//
// Filters, per axis: `area` averages the source pixels each output pixel covers, weighted by the
// covered fraction (INTER_AREA) when the window shrinks along that axis, and interpolates linearly
// between pixel centres when it grows; `linear` always interpolates linearly (INTER_LINEAR, no
// antialiasing). Plain CUDA, no LibTorch.
#pragma once

#include <cstdint>

namespace ffcv::torch_adapter::detail {

struct CropJob {
  const std::uint8_t* source = nullptr;  // device, interleaved RGB, source_width * 3 per row
  int source_width = 0;
  int source_height = 0;
  int top = 0, left = 0, height = 0, width = 0;  // the window, inside the source
  int flip = 0;
  int out_index = 0;  // position of the sample in the output batch
};

// `jobs` is device memory holding `count` jobs; `out` is device memory of the batch. Enqueued on
// `stream` (a cudaStream_t); throws std::runtime_error when the launch fails.
void crop_resize_cuda(const CropJob* jobs, int count, std::uint8_t* out, int out_height,
                      int out_width, bool area, void* stream);

}  // namespace ffcv::torch_adapter::detail
