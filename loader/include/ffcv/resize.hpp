// Resampling of an 8-bit RGB region to a fixed output size: the resize step of
// RandomResizedCrop and of the centre-crop decoder.
//
// Why our own resampler: FFCV resizes with OpenCV's INTER_AREA, which takes 34-49% of the
// training pipeline's time on one core (docs: cpu-limits.md), because OpenCV's general
// (non-integer ratio) area path is scalar. This one computes the same filter from per-axis
// weight tables built once per call, runs a horizontal then a vertical pass in 16-bit fixed
// point with SIMD (SSE2 on x86-64, the baseline; a scalar path elsewhere), and keeps every
// buffer in a caller-owned scratch vector, so it allocates nothing once the scratch is large
// enough.
//
// Filters (s = source extent / output size, per axis):
//  - kArea, both axes shrinking (s >= 1): each output pixel is the mean of the source area it
//    covers, partially covered source pixels weighted by their coverage. This is OpenCV's
//    INTER_AREA definition; on integer regions the results agree with cv::resize within 1.
//  - kArea, some axis growing (s < 1): what OpenCV INTER_AREA does there. A growing axis uses
//    the same exact coverage (an output cell spans at most two source pixels); in that case a
//    shrinking axis uses OpenCV's two-tap rule (pixel floor(start) and the next one, the weight
//    of the next being the fractional part of (end - floor(start) - 1) / s), not a box.
//  - kLinear: bilinear interpolation with half-pixel centres, clamped at the region's edges
//    (OpenCV INTER_LINEAR semantics).
// Regions may have fractional bounds; a region is treated as an image of its own (no pixel
// outside the source pixels it touches is read into the result).
//
// Accuracy: weights are rounded to 1/65536 with error diffusion, so each output differs from the
// exact filter by well under 0.1 for ratios up to ~10x (at most 0.25 for up to 64 taps per
// axis; more taps switch to an exact 32-bit path), then rounds half up.
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace ffcv
