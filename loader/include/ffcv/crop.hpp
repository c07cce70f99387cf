// Crop windows for the resized-crop decoders: the random crop of ImageNet-style training and the
// centred square crop of validation.
//
// Both functions only choose a window in the coordinates of the full source image; cutting it out
// and resizing it is the decoder's job. They follow Python FFCV (ffcv/transforms/utils/
// fast_crop.py: get_random_crop and get_center_crop), whose random crop in turn re-implements
// torchvision's RandomResizedCrop.get_params, so that a model trained with this loader sees crops
// from the same distribution as one trained with FFCV or torchvision:
//
//  - random_resized_crop makes up to kRandomCropTries attempts. Each draws an area fraction
//    uniformly from [scale[0], scale[1]) and a log aspect ratio (width / height) uniformly from
//    [log ratio[0], log ratio[1]), and turns them into a size with
//    w = round(sqrt(area * aspect)), h = round(sqrt(area / aspect)), rounding halves to even as
//    Python's round() does. The first attempt with 0 < w <= W and 0 < h <= H wins, and its
//    position is uniform over all positions that keep it inside the image: top = floor(u * (H -
//    h + 1)), left = floor(u * (W - w + 1)). When all attempts fail (typically for images much
//    wider or taller than the ratio range allows), the crop falls back to the largest centred
//    window whose aspect ratio is clamped into the range: an image narrower than ratio[0] keeps
//    its width and gets h = round(W / ratio[0]); one wider than ratio[1] keeps its height and gets
//    w = round(H * ratio[1]); otherwise the whole image. Fallback offsets are (H - h) / 2 and
//    (W - w) / 2, rounded down.
//  - center_crop takes the square of side c = floor(ratio * min(H, W)) (FFCV truncates, it does
//    not round) at offsets (H - c) / 2 and (W - c) / 2, rounded down.
//
// Arithmetic is in double precision, as in FFCV (torchvision draws its uniforms in float32; the
// resulting distributions are the same to well within sampling error, which
// tests/unit/crop_test.cpp checks against statistics recorded from torchvision).
//
// Deliberate difference: FFCV and torchvision can return a side of 0 for degenerate inputs (a
// fallback with W / ratio[0] < 0.5 or H * ratio[1] < 0.5, or a centre crop with ratio * min(H, W)
// < 1), which then fails inside the resize. Here such a side is raised to 1.
//
// Randomness: random_resized_crop asks `uniform(n)` for the n-th uniform draw in [0, 1) of the
// sample (the loader passes SampleContext::uniform, so a window is a pure function of seed, epoch,
// sample and step). Attempt k (0-based) uses draws 4k (area fraction) and 4k + 1 (log aspect
// ratio); if it is accepted, draws 4k + 2 (top) and 4k + 3 (left) place it. Draws never overlap,
// all are below kRandomCropDraws, and the fallback uses none.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

namespace ffcv {

// A window of an image: rows [top, top + height), columns [left, left + width).
struct CropWindow {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;

  bool operator==(const CropWindow&) const = default;
};

// How many attempts random_resized_crop makes before falling back, and an upper bound on the draw
// numbers it passes to `uniform`.
inline constexpr int kRandomCropTries = 10;
inline constexpr std::uint32_t kRandomCropDraws = 4 * kRandomCropTries;

// A random window of an image of `height` x `width` pixels, as described above. scale = (min,
// max) fraction of the image area, 0 <= min <= max, max > 0 (max may exceed 1, as torchvision
// allows); ratio = (min, max) width / height, 0 < min <= max. Throws ConfigError for other
// parameters or a non-positive image size.
CropWindow random_resized_crop(int height, int width, std::array<double, 2> scale,
                               std::array<double, 2> ratio,
                               const std::function<double(std::uint32_t)>& uniform);

// The centred square window of side floor(ratio * min(height, width)). ratio must be within
// (0, 1] and the image size positive; ConfigError otherwise.
CropWindow center_crop(int height, int width, double ratio);

// Throws ConfigError unless random_resized_crop accepts (scale, ratio); for checking options
// once, before any image is seen. `what` prefixes the message (e.g. the operation's name).
void validate_random_crop_params(std::array<double, 2> scale, std::array<double, 2> ratio,
                                 const char* what);

}  // namespace ffcv
