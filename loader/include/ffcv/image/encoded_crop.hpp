// EncodedCrop: one image sample prepared on the CPU for decoding on the GPU.
//
// The GPU image path splits the resized-crop decoders in two. On the CPU, the decoders
// `random_resized_crop_encoded` and `center_crop_encoded`
// (loader/src/ops/encoded_crop_decoders.cpp) read a sample's metadata, choose its crop window with
// the very same keyed draws as `random_resized_crop` / `center_crop` (ffcv/crop.hpp), draw its flip
// as a `random_horizontal_flip` placed right after the crop would, read the JPEG's header (a
// damaged header fails here, on the worker, and follows the loader's on_error like any bad sample)
// and write one record: this header followed by the JPEG's bytes. Raw (uncompressed) samples are
// cropped, resized and flipped on the CPU as the CPU path does and their record holds the output
// pixels. On the GPU, the device step `decode_crops` (ffcv/torch/gpu_image_decode.hpp) decodes
// the batch's JPEGs with nvJPEG and cuts, resizes and flips each window in one kernel.
//
// Record layout (little-endian), `kEncodedCropHeaderBytes` bytes of header, then the payload,
// then zeros up to the decoder's declared sample size (the same for every record of a field):
//   u32 kind            1 = JPEG bytes follow, 2 = out_height x out_width x 3 RGB pixels follow
//   u32 out_height, out_width
//   u32 frame_height, frame_width   the stored image's size
//   i32 top, left, height, width    the crop window, in frame pixels (ffcv::CropWindow)
//   u32 flip            1: mirror the output left-right (already applied to kind-2 pixels)
//   u32 hardware_ok     1: an 8-bit Huffman baseline JPEG with 3 components, which hardware
//                       JPEG decoders take; 0: progressive, grayscale or other codings
//   u32 components      the JPEG's components (0 for pixels)
//   u64 payload_bytes   bytes after the header
//   u64 sample          dataset index, for error messages
//   then zeros up to kEncodedCropHeaderBytes
#pragma once

#include <cstdint>
#include <span>

#include "ffcv/crop.hpp"

namespace ffcv {

inline constexpr std::uint64_t kEncodedCropHeaderBytes = 64;

enum class EncodedCropKind : std::uint32_t { kJpeg = 1, kPixels = 2 };

struct EncodedCropHeader {
  EncodedCropKind kind = EncodedCropKind::kJpeg;
  int out_height = 0;
  int out_width = 0;
  int frame_height = 0;
  int frame_width = 0;
  CropWindow window;
  bool flip = false;
  bool hardware_ok = false;
  int components = 0;
  std::uint64_t payload_bytes = 0;
  std::uint64_t sample = 0;

  // Writes the header into the first kEncodedCropHeaderBytes bytes of `record`.
  void store(std::uint8_t* record) const;
  // Reads and checks a record of `record_bytes` bytes: a known kind, positive sizes, a window
  // inside the frame and a payload inside the record (kind 2: exactly the output's pixels).
  // Throws Error naming what is wrong.
  static EncodedCropHeader load(std::span<const std::uint8_t> record);
};

}  // namespace ffcv
