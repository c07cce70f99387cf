// Resampling of an 8-bit RGB region to a fixed output size: the resize step of
// RandomResizedCrop and of the centre-crop decoder.
//
// Why our own resampler: FFCV resizes with OpenCV's INTER_AREA, which was measured at 34-49% of
// an FFCV-style training pipeline's time on one core (0.36-0.43 ms per image), because OpenCV's
// general (non-integer ratio) area path is scalar. This one computes the same filter from
// per-axis weight tables built once per call, runs a horizontal then a vertical pass in 16-bit
// fixed point with SIMD (SSE2 on x86-64, the baseline; a scalar path elsewhere), and keeps every
// buffer in a caller-owned scratch (a vector, or a span sized once with
// resize_rgb_scratch_bytes), so it allocates nothing once the scratch is large enough. It is
// 7-9x faster than cv::resize(INTER_AREA) on one thread (resize_micro.cpp).
//
// Filters (s = source extent / output size, per axis):
//  - kArea, both axes shrinking (s >= 1): each output pixel is the mean of the source area it
//    covers, partially covered source pixels weighted by their coverage. This is OpenCV's
//    INTER_AREA definition; on integer regions the results agree with cv::resize within 1.
//  - kArea, some axis growing (s < 1): what OpenCV INTER_AREA does there, on both axes: output
//    d takes source pixel i = floor(start + d*s) and the next one, the next one weighted by the
//    share of the output cell beyond pixel i, modulo 1. On a growing axis that is the exact
//    coverage (a cell spans at most two pixels), except that a cell boundary meant to fall on a
//    pixel boundary can round to just before it and select the previous pixel, as OpenCV's
//    arithmetic (reproduced here) does; on a shrinking axis it is a two-tap filter, not a box.
//  - kLinear: bilinear interpolation with half-pixel centres, clamped at the region's edges
//    (OpenCV INTER_LINEAR semantics).
// Regions may have fractional bounds; a region is treated as an image of its own: only the
// source pixels it touches are read, partially covered ones weighted by their coverage.
//
// Accuracy: weights are rounded to 1/65536 with error diffusion (each output's weights sum to
// exactly 1) and products are 16-bit fixed point, so before the final round-half-up each value is
// within 0.03 of a level of the exact filter for ratios up to 2x, 0.1 up to 10x and 0.52 up to 64
// taps per axis (~60x; an axis with more taps takes an exact 32-bit path): every result is within
// 1 of the exactly rounded filter, and constant images stay constant. Against cv::resize on
// integer regions: within 1 everywhere (see resize_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ffcv {

enum class Interpolation { kArea, kLinear };

// "area" or "linear"; throws ConfigError otherwise.
Interpolation parse_interpolation(std::string_view name);

// A region with fractional bounds, the crop [x, x+w) x [y, y+h) in source pixel coordinates, of
// an 8-bit RGB image (HWC, rows of `stride` bytes) of width x height pixels.
struct ResizeSource {
  const std::uint8_t* pixels = nullptr;
  int width = 0;
  int height = 0;
  std::size_t stride = 0;
  double x = 0;
  double y = 0;
  double w = 0;
  double h = 0;
};

// Resizes the region to dst_width x dst_height packed RGB at `dst` (rows of dst_width*3 bytes;
// must not overlap the source). `scratch` holds the weight tables and intermediate rows; reuse it
// between calls (one per thread). Throws ConfigError on an empty region, a region outside the
// image (beyond a 1e-6 pixel tolerance), a non-positive output size or null pointers.
void resize_rgb(const ResizeSource& source, std::uint8_t* dst, int dst_width, int dst_height,
                Interpolation interpolation, std::vector<std::uint8_t>& scratch);

// The same with a caller's scratch that does not grow: for callers that size their memory once
// (a pipeline step declares its scratch before the epoch). Throws ConfigError as above, and when
// `scratch` is smaller than this call needs; resize_rgb_scratch_bytes gives a size that always
// suffices. Same output bytes as the vector overload.
void resize_rgb(const ResizeSource& source, std::uint8_t* dst, int dst_width, int dst_height,
                Interpolation interpolation, std::span<std::uint8_t> scratch);

// Scratch bytes that suffice for resizing any region of any source image of at most
// max_source_width x max_source_height pixels to dst_width x dst_height, with either filter.
std::size_t resize_rgb_scratch_bytes(int max_source_width, int max_source_height, int dst_width,
                                     int dst_height);

}  // namespace ffcv
