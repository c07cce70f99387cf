// The GPU image path: JPEG decoding, cropping, resizing and flipping on the GPU, so that a few
// host cores can feed a fast GPU.
//
//   CPU worker (per sample)                      copy stream (per batch)
//   random_resized_crop_encoded / center_crop_encoded   ->   decode_crops -> normalize -> ...
//   window + flip from the keyed draws,          nvJPEG decodes the batch's JPEGs (the GPU's
//   header checked, JPEG bytes copied into       hardware engines where it has them, the hybrid
//   the record; raw images resized here          backend otherwise); one kernel cuts, resizes
//   (ffcv/image/encoded_crop.hpp)                and mirrors every window into uint8 [N, H, W, 3]
//
// Threads: apply() may run on several threads at once (DeviceTransfer's preparing threads), each
// on its own stream; every stream gets its own nvJPEG decoder, so they decode side by side.
//
// decode_crops is a device step (ffcv/torch/device_operation.hpp): it takes the host batch of
// records (uint8 [N, record bytes], pinned when the loader's allocator is pinned_allocator()) and
// returns uint8 [N, height, width, 3] on the current CUDA device, so the steps that follow it
// are those that follow to_device on the CPU path. Its parameters: `size` (or `height` and
// `width`), which must equal the CPU decoder's; `interpolation` (area | linear, as the CPU
// decoders); `backend` (auto: hardware where the device has JPEG engines, else hybrid;
// hardware: refuse a device without them; hybrid: never the engines).
//
// Same seed, same windows and flips as the CPU path; pixels differ by the decoders' IDCT and
// chroma upsampling and by the resize kernel (tests/torch/gpu_image_decode_test.cpp measures
// the difference). A JPEG nvJPEG cannot decode is decoded on the host with libjpeg, as the CPU
// path would decode it; a sample libjpeg cannot decode either fails the batch with an Error
// naming the sample. A damaged header already fails on the CPU worker, where the loader's
// on_error applies. Out of GPU memory is LibTorch's error (one line naming the allocation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ffcv/torch/device_operation.hpp"

namespace ffcv::torch_adapter {

// Whether this build has the GPU image path (CUDA and nvJPEG were found at configure time).
bool gpu_image_decode_built();

// What a decode_crops step has done since it was built.
struct GpuDecodeCounts {
  std::string backend;  // e.g. "hardware (... engines)" or "gpu_hybrid"; "" before use
  std::uint64_t hardware_frames = 0;  // JPEGs decoded by the hardware engines
  std::uint64_t hybrid_frames = 0;    // by the hybrid backend (progressive files, or no engines)
  std::uint64_t host_frames = 0;      // by libjpeg on the host after nvJPEG refused them
  std::uint64_t pixel_records = 0;    // raw samples resized on the CPU worker, copied as they are
  std::uint64_t batches = 0;
  // Host time in the step's apply(), and of it in nvJPEG's calls: the work a batch costs the
  // thread that prepares it (DeviceTransfer's own thread), not the GPU's.
  // Starting decoders (nvJPEG's first start in a process takes about a second) is counted in
  // decoder_start_seconds, not in host_seconds; records_seconds is the part of host_seconds
  // spent reading the records and enqueueing the raw samples' copies.
  double host_seconds = 0;
  double nvjpeg_host_seconds = 0;
  double records_seconds = 0;
  double decoder_start_seconds = 0;
  // Of nvjpeg_host_seconds: reading every header again, the hardware backend's calls (they
  // wait for the engines), the hybrid backend's.
  double nvjpeg_headers_seconds = 0;
  double nvjpeg_hardware_seconds = 0;
  double nvjpeg_hybrid_seconds = 0;
  // nvJPEG's memory requests of the decoder the step holds (a pooled one: since it started),
  // served by CUDA and from the decoder's cache. Once batches repeat, CUDA is asked nothing.
  std::uint64_t nvjpeg_allocations = 0;
  std::uint64_t nvjpeg_reuses = 0;
};

// The counts of `step` when it is a decode_crops step, else nullopt-like (backend "").
GpuDecodeCounts gpu_decode_counts(const DeviceOperation& step);

}  // namespace ffcv::torch_adapter
