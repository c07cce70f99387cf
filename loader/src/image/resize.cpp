// Separable RGB resampling (area / bilinear) in 16-bit fixed point; see resize.hpp.
//
// Per call: one weight table per axis (first source index and Q16 weights of every output
// index, rounded with error diffusion so each output's weights sum to exactly 1), then for each
// output row the horizontal pass of the source rows it needs (each source row once, into a ring
// of 16-bit rows holding value * 256) and the vertical pass of those rows into the output.
//
// Arithmetic of the fast path (an axis with at most kMaxFastTaps taps): a product is the high
// half of a 16x16-bit multiply (SSE2 pmulhuw; the scalar fallback computes the same bits), so
// each tap truncates by less than 1/256 of a level. Adding half the tap count back keeps that
// error below (taps_x + taps_y + 5) / 512 of a level (0.06 for 10x downscales, 0.26 at the
// limit). The Q16 weight rounding adds at most (taps - 1) * 255 / 131072 per axis, and only on
// content that alternates between extremes (its prefix sums are exact to half a unit). The total
// stays below 0.52, so every result is within 1 of the exactly rounded filter, and constant
// images (no rounding of weights matters) stay constant. An axis with more taps (shrinking by
// more than ~60x) takes the exact path instead, which accumulates full 32-bit products.
//
// Horizontal kernel (SSE2): an 8-byte load holds two RGB pixels (and 2 bytes weighted 0), which
// one unpack widens to 16 bits; two rows that need the same taps share the offset and weight
// loads. The vertical pass is plain loops that the compiler vectorises. An AVX2 variant of the
// horizontal kernel (two rows per 256-bit register) was measured at only ~5% faster overall and
// left out.
#include "ffcv/image/resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "ffcv/util/errors.hpp"

#if defined(__SSE2__) && !defined(FFCV_RESIZE_NO_SIMD)
#include <emmintrin.h>
#define FFCV_RESIZE_SSE2 1
#else
#define FFCV_RESIZE_SSE2 0
#endif

namespace ffcv {

Interpolation parse_interpolation(std::string_view name) {
  if (name == "area") return Interpolation::kArea;
  if (name == "linear") return Interpolation::kLinear;
  throw ConfigError("unknown interpolation '" + std::string(name) +
                    "': expected 'area' or 'linear'");
}

namespace {

constexpr std::int64_t kWeightOne = 1 << 16;  // Q16 weights
// The fast horizontal pass widens a byte p to p * 257 (one unpack of the byte with itself) and
// so uses weights that sum to 65281 = ~65536 * 256 / 257: the products come out as value * 256
// (times 1.00002).
constexpr std::int64_t kHorizontalOne = 65281;
#ifndef FFCV_RESIZE_MAX_FAST_TAPS  // overridable to test the exact path
#define FFCV_RESIZE_MAX_FAST_TAPS 64
#endif
constexpr int kMaxFastTaps = FFCV_RESIZE_MAX_FAST_TAPS;
constexpr double kEdgeTolerance = 1e-6;    // how far a region may stick out of the image
constexpr double kCoverageEpsilon = 1e-9;  // coverage below this is treated as none
constexpr int kMaxDimension = 1 << 24;     // keeps every size and index in an int
constexpr std::size_t kAlignment = 64;

enum class AxisFilter {
  kBox,         // exact coverage of [start + d*s, start + (d+1)*s)
  kTwoTapArea,  // OpenCV INTER_AREA's two-tap rule, used on both axes when either one grows
  kLinear,      // half-pixel-centred bilinear
};

// One axis of the geometry: the region [start, start + length) of source pixels first..last
// (the ones it touches), resampled to `size` outputs.
struct Axis {
  double start = 0;
  double length = 0;
  int first = 0;
  int last = 0;
  int size = 0;
  AxisFilter filter = AxisFilter::kBox;
  // Source pixels per output and its inverse, computed as OpenCV does (scale is the inverse of
  // the inverse) so that cell boundaries round alike.
  double inverse = 1;
  double scale = 1;
};

// The source pixels output d reads: `count` pixels from `first`, weighted by coverage of
// [a, b) (box) or (1 - next_weight, next_weight) (two-tap filters).
struct OutputTaps {
  int first = 0;
  int count = 1;
  bool box = false;
  double a = 0;
  double b = 0;
  double next_weight = 0;
};

OutputTaps output_taps(const Axis& axis, int d) {
  const double scale = axis.scale;
  OutputTaps taps;
  if (axis.filter == AxisFilter::kBox) {
    taps.box = true;
    taps.a = axis.start + d * scale;
    taps.b = d + 1 == axis.size ? axis.start + axis.length : axis.start + (d + 1) * scale;
    // floor and ceil of non-negative values by truncation (cheaper without SSE4.1's roundsd).
    const int first =
        std::clamp(static_cast<int>(taps.a + kCoverageEpsilon), axis.first, axis.last);
    const double end = taps.b - kCoverageEpsilon;
    const int truncated = static_cast<int>(end);
    const int last = std::clamp(truncated < end ? truncated : truncated - 1, first, axis.last);
    taps.first = first;
    taps.count = last - first + 1;
    return taps;
  }
  double index = 0;
  double fraction = 0;
  if (axis.filter == AxisFilter::kLinear) {
    const double centre = axis.start + (d + 0.5) * scale - 0.5;
    index = std::floor(centre);
    fraction = centre - index;
  } else {
    // OpenCV INTER_AREA's rule when either axis grows, in its arithmetic (relative to the
    // region, a float share): the share of the output cell beyond source pixel `index`, modulo
    // 1. A growing axis gets exact coverage, except that a cell boundary that should fall on a
    // pixel boundary may round to just before it, selecting the previous pixel as OpenCV does.
    const double inverse = axis.inverse;
    const double offset = axis.start - axis.first;  // 0 for an integer region
    const double relative = std::floor(offset + d * scale);
    const float beyond = static_cast<float>((d + 1 + offset * inverse) - (relative + 1) * inverse);
    index = axis.first + relative;
    fraction = beyond <= 0 ? 0.0 : beyond - std::floor(beyond);
  }
  if (index < axis.first) {
    index = axis.first;
    fraction = 0;
  }
  if (index >= axis.last) {
    index = axis.last;
    fraction = 0;
  }
  taps.first = static_cast<int>(index);
  taps.next_weight = fraction;
  taps.count = fraction > kCoverageEpsilon ? 2 : 1;
  return taps;
}

// An upper bound of the taps of any output: a box of width s touches at most floor(s) + 2
// pixels; the other filters read two.
int tap_bound(const Axis& axis) {
  if (axis.filter != AxisFilter::kBox) return 2;
  const double region = axis.last - axis.first + 1;
  return static_cast<int>(std::min(std::floor(axis.scale) + 2, region));
}

// Fills first[d] (the first source index relative to axis.first, times `index_scale`) and
// weights[d * stride + k] (summing to `one` with error diffusion, zero beyond the output's own
// taps, at most 65535). Returns the most taps any output has (<= stride).
int fill_axis_table(const Axis& axis, int stride, int index_scale, std::int64_t one,
                    std::int32_t* first, std::uint16_t* weights) {
  int taps = 1;
  for (int d = 0; d < axis.size; ++d) {
    OutputTaps t = output_taps(axis, d);
    first[d] = (t.first - axis.first) * index_scale;
    t.count = std::min(t.count, stride);  // never more than the bound; kept in bounds regardless
    taps = std::max(taps, t.count);
    std::uint16_t* w = weights + static_cast<std::size_t>(d) * stride;
    if (t.box) {
      const double to_q16 = static_cast<double>(one) / (t.b - t.a);
      double covered = 0;
      std::int64_t previous = 0;
      for (int k = 0; k < t.count; ++k) {
        const double lo = std::max(t.a, static_cast<double>(t.first + k));
        const double hi = std::min(t.b, static_cast<double>(t.first + k + 1));
        covered += std::max(0.0, hi - lo);
        const std::int64_t q =
            k + 1 == t.count
                ? one
                : std::clamp(static_cast<std::int64_t>(covered * to_q16 + 0.5), previous, one);
        w[k] = static_cast<std::uint16_t>(std::min<std::int64_t>(q - previous, 65535));
        previous = q;
      }
    } else {
      const std::int64_t next = std::min<std::int64_t>(
          static_cast<std::int64_t>(t.next_weight * static_cast<double>(one) + 0.5), 65535);
      w[0] = static_cast<std::uint16_t>(std::min<std::int64_t>(one - next, 65535));
      if (t.count > 1) w[1] = static_cast<std::uint16_t>(next);
    }
    for (int k = t.count; k < stride; ++k) w[k] = 0;
  }
  return taps;
}

// Re-lays weights[d * stride + k] as weights[d * taps + k] (taps <= stride), in place.
void compact_weights(std::uint16_t* weights, int size, int stride, int taps) {
  if (taps == stride) return;
  for (int d = 1; d < size; ++d) {
    std::memmove(weights + static_cast<std::size_t>(d) * taps,
                 weights + static_cast<std::size_t>(d) * stride, taps * sizeof(std::uint16_t));
  }
}

inline std::uint16_t mul_high(std::uint16_t a, std::uint16_t b) {
  return static_cast<std::uint16_t>((static_cast<std::uint32_t>(a) * b) >> 16);
}

// --- Horizontal pass: one source row (8-bit RGB, from the region's first column) to one row of
// dst_width*3 values * 256 (16-bit). offset[d] is the byte offset of output d's first pixel;
// `out` has room for one element more (the SIMD store).

#if FFCV_RESIZE_SSE2
// Expanded weights for the SIMD kernel: per output and pair of taps, eight 16-bit lanes
// (w0, w0, w0, w1, w1, w1, 0, 0) matching one 8-byte load of two RGB pixels.
void expand_pair_weights(const std::uint16_t* weights, int taps, int size, std::uint16_t* out) {
  const int pairs = (taps + 1) / 2;
  for (int d = 0; d < size; ++d) {
    const std::uint16_t* w = weights + static_cast<std::size_t>(d) * taps;
    for (int j = 0; j < pairs; ++j) {
      const std::uint16_t w0 = w[2 * j];
      const std::uint16_t w1 = 2 * j + 1 < taps ? w[2 * j + 1] : 0;
      std::uint16_t* lanes = out + (static_cast<std::size_t>(d) * pairs + j) * 8;
      lanes[0] = lanes[1] = lanes[2] = w0;
      lanes[3] = lanes[4] = lanes[5] = w1;
      lanes[6] = lanes[7] = 0;
    }
  }
}

// One row (out1 == nullptr) or two rows `stride` bytes apart, which share offsets and weights.
// kPairs > 0: the pair count fixed at compile time (unrolled); 0: `pairs` at run time.
template <int kPairs>
void horizontal_fast_sse2(const std::uint8_t* src, std::ptrdiff_t stride,
                          const std::int32_t* offset, const std::uint16_t* pair_weights, int pairs,
                          int dst_width, std::uint16_t bias, std::uint16_t* out0,
                          std::uint16_t* out1) {
  const int n = kPairs > 0 ? kPairs : pairs;
  const auto b = static_cast<short>(bias);
  const __m128i initial = _mm_setr_epi16(b, b, b, 0, 0, 0, 0, 0);
  const __m128i* w = reinterpret_cast<const __m128i*>(pair_weights);
  // Two pixels (6 bytes, 2 more read and weighted 0) widened to p * 257, times the weights.
  auto product = [](const std::uint8_t* p, __m128i weights) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_mulhi_epu16(_mm_unpacklo_epi8(bytes, bytes), weights);
  };
  auto store = [](std::uint16_t* out, __m128i acc) {
    acc = _mm_add_epi16(acc, _mm_srli_si128(acc, 6));  // lanes 0-2 += lanes 3-5
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), acc);
  };
  if (out1 == nullptr) {
    for (int d = 0; d < dst_width; ++d, w += n) {
      const std::uint8_t* p = src + offset[d];
      __m128i acc = initial;
      for (int j = 0; j < n; ++j) acc = _mm_add_epi16(acc, product(p + 6 * j, w[j]));
      store(out0 + 3 * d, acc);
    }
    return;
  }
  for (int d = 0; d < dst_width; ++d, w += n) {
    const std::uint8_t* p = src + offset[d];
    __m128i acc0 = initial;
    __m128i acc1 = initial;
    for (int j = 0; j < n; ++j) {
      const __m128i weights = w[j];
      acc0 = _mm_add_epi16(acc0, product(p + 6 * j, weights));
      acc1 = _mm_add_epi16(acc1, product(p + stride + 6 * j, weights));
    }
    store(out0 + 3 * d, acc0);
    store(out1 + 3 * d, acc1);
  }
}
#endif

// The same bits as the SIMD kernel, one channel at a time (the portable fallback).
[[maybe_unused]] void horizontal_fast_scalar(const std::uint8_t* src, const std::int32_t* offset,
                                             const std::uint16_t* weights, int taps, int dst_width,
                                             std::uint16_t bias, std::uint16_t* out) {
  for (int d = 0; d < dst_width; ++d) {
    const std::uint8_t* p = src + offset[d];
    const std::uint16_t* w = weights + static_cast<std::size_t>(d) * taps;
    for (int c = 0; c < 3; ++c) {
      std::uint16_t acc = bias;
      for (int k = 0; k < taps; ++k) {
        const auto widened = static_cast<std::uint16_t>(p[3 * k + c] * 257);
        acc = static_cast<std::uint16_t>(acc + mul_high(widened, w[k]));
      }
      out[3 * d + c] = acc;
    }
  }
}

// Full 32-bit products with Q16 weights, rounded once to value * 256 (for very many taps).
void horizontal_exact(const std::uint8_t* src, const std::int32_t* offset,
                      const std::uint16_t* weights, int taps, int dst_width, std::uint16_t* out) {
  for (int d = 0; d < dst_width; ++d) {
    const std::uint8_t* p = src + offset[d];
    const std::uint16_t* w = weights + static_cast<std::size_t>(d) * taps;
    std::uint32_t acc[3] = {128, 128, 128};
    for (int k = 0; k < taps; ++k) {
      for (int c = 0; c < 3; ++c) acc[c] += static_cast<std::uint32_t>(p[3 * k + c]) * w[k];
    }
    for (int c = 0; c < 3; ++c) out[3 * d + c] = static_cast<std::uint16_t>(acc[c] >> 8);
  }
}

// --- Vertical pass: `taps` rows of values * 256 to one output row, rounding half up. Plain
// loops over contiguous elements, which the compiler vectorises (pmulhuw with SSE2).

template <int kTaps>
void vertical_fast_fixed(const std::uint16_t* const* rows, const std::uint16_t* weights,
                         std::uint16_t bias, int length, std::uint8_t* __restrict out) {
  const std::uint16_t* __restrict r0 = rows[0];
  const std::uint16_t* __restrict r1 = rows[kTaps > 1 ? 1 : 0];
  const std::uint16_t* __restrict r2 = rows[kTaps > 2 ? 2 : 0];
  const std::uint16_t* __restrict r3 = rows[kTaps > 3 ? 3 : 0];
  const std::uint16_t w0 = weights[0];
  const std::uint16_t w1 = kTaps > 1 ? weights[1] : 0;
  const std::uint16_t w2 = kTaps > 2 ? weights[2] : 0;
  const std::uint16_t w3 = kTaps > 3 ? weights[3] : 0;
  const std::uint16_t initial = static_cast<std::uint16_t>(bias + 128);
  for (int i = 0; i < length; ++i) {
    std::uint16_t acc = static_cast<std::uint16_t>(initial + mul_high(r0[i], w0));
    if constexpr (kTaps > 1) acc = static_cast<std::uint16_t>(acc + mul_high(r1[i], w1));
    if constexpr (kTaps > 2) acc = static_cast<std::uint16_t>(acc + mul_high(r2[i], w2));
    if constexpr (kTaps > 3) acc = static_cast<std::uint16_t>(acc + mul_high(r3[i], w3));
    out[i] = static_cast<std::uint8_t>(acc >> 8);
  }
}

void vertical_fast_generic(const std::uint16_t* const* rows, const std::uint16_t* weights, int taps,
                           std::uint16_t bias, int length, std::uint16_t* __restrict acc,
                           std::uint8_t* __restrict out) {
  const std::uint16_t initial = static_cast<std::uint16_t>(bias + 128);
  for (int i = 0; i < length; ++i) acc[i] = initial;
  for (int k = 0; k < taps; ++k) {
    const std::uint16_t* __restrict row = rows[k];
    const std::uint16_t w = weights[k];
    for (int i = 0; i < length; ++i)
      acc[i] = static_cast<std::uint16_t>(acc[i] + mul_high(row[i], w));
  }
  for (int i = 0; i < length; ++i) out[i] = static_cast<std::uint8_t>(acc[i] >> 8);
}

void vertical_exact(const std::uint16_t* const* rows, const std::uint16_t* weights, int taps,
                    int length, std::uint32_t* __restrict acc, std::uint8_t* __restrict out) {
  for (int i = 0; i < length; ++i) acc[i] = 1u << 23;
  for (int k = 0; k < taps; ++k) {
    const std::uint16_t* __restrict row = rows[k];
    const std::uint32_t w = weights[k];
    for (int i = 0; i < length; ++i) acc[i] += row[i] * w;
  }
  for (int i = 0; i < length; ++i) out[i] = static_cast<std::uint8_t>(acc[i] >> 24);
}

// Carves aligned arrays out of the scratch: a vector grows to fit, a caller's span must be large
// enough.
class ScratchLayout {
 public:
  template <typename T>
  std::size_t add(std::size_t count) {
    const std::size_t offset = size_;
    size_ += (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    return offset;
  }
  // The bytes a scratch must hold: the arrays plus room to align their start.
  std::size_t bytes() const { return size_ + kAlignment; }
  std::uint8_t* bind(std::vector<std::uint8_t>& scratch) const {
    if (scratch.size() < bytes()) scratch.resize(bytes());
    return aligned(scratch.data());
  }
  std::uint8_t* bind(std::span<std::uint8_t> scratch) const {
    if (scratch.size() < bytes()) {
      throw ConfigError("resize: the scratch holds " + std::to_string(scratch.size()) +
                        " bytes, this resize needs " + std::to_string(bytes()));
    }
    return aligned(scratch.data());
  }

 private:
  static std::uint8_t* aligned(std::uint8_t* data) {
    const auto address = reinterpret_cast<std::uintptr_t>(data);
    return data + ((kAlignment - address % kAlignment) % kAlignment);
  }
  std::size_t size_ = 0;
};

// Where each array of one call lies in the scratch.
struct ScratchOffsets {
  std::size_t offset_x, weights_x, pairs_x, first_y, weights_y, ring, rows, padded, acc;
};

// Lays out the arrays of a call with these tap bounds (see resize_rgb); every size grows with
// every argument, which resize_rgb_scratch_bytes relies on.
ScratchOffsets lay_out(ScratchLayout& layout, int dst_width, int dst_height, int bound_x,
                       int bound_y, bool fast_x, int region_columns) {
  const int pairs_bound = (bound_x + 1) / 2;
  const std::size_t ring_row = static_cast<std::size_t>(3 * dst_width) + 8;
  // Bytes a horizontal kernel may read from a row's first region pixel on (two-pixel loads).
  const std::size_t max_read_bound =
      3 * static_cast<std::size_t>(region_columns) + 6 * static_cast<std::size_t>(pairs_bound) + 8;
  ScratchOffsets at{};
  at.offset_x = layout.add<std::int32_t>(dst_width);
  at.weights_x = layout.add<std::uint16_t>(std::size_t{1} * dst_width * bound_x);
  at.pairs_x = layout.add<std::uint16_t>(
      FFCV_RESIZE_SSE2 && fast_x ? std::size_t{8} * dst_width * pairs_bound : 0);
  at.first_y = layout.add<std::int32_t>(dst_height);
  at.weights_y = layout.add<std::uint16_t>(std::size_t{1} * dst_height * bound_y);
  at.ring = layout.add<std::uint16_t>(ring_row * (bound_y + 1));
  at.rows = layout.add<const std::uint16_t*>(bound_y);
  at.padded = layout.add<std::uint8_t>(max_read_bound);
  at.acc = layout.add<std::uint32_t>(3 * static_cast<std::size_t>(dst_width));
  return at;
}

Axis make_axis(double start, double length, int extent, int size, const char* name) {
  if (!std::isfinite(start) || !std::isfinite(length) || length <= 0) {
    throw ConfigError(std::string("resize: the region's ") + name + " extent must be positive");
  }
  if (start < -kEdgeTolerance || start + length > extent + kEdgeTolerance) {
    throw ConfigError(std::string("resize: the region lies outside the image along ") + name);
  }
  if (size <= 0 || size > kMaxDimension) {
    throw ConfigError(std::string("resize: the output's ") + name + " size must be in 1.." +
                      std::to_string(kMaxDimension));
  }
  Axis axis;
  axis.start = std::clamp(start, 0.0, static_cast<double>(extent));
  axis.length = std::min(length, extent - axis.start);
  if (axis.length <= 0) {
    throw ConfigError(std::string("resize: the region is empty along ") + name);
  }
  axis.first =
      std::clamp(static_cast<int>(std::floor(axis.start + kCoverageEpsilon)), 0, extent - 1);
  axis.last =
      std::clamp(static_cast<int>(std::ceil(axis.start + axis.length - kCoverageEpsilon)) - 1,
                 axis.first, extent - 1);
  axis.size = size;
  axis.inverse = size / axis.length;
  axis.scale = 1.0 / axis.inverse;
  return axis;
}

// Checks what resize_rgb is given and returns its two axes (x, y), with the filter that
// `interpolation` and the scales select.
std::pair<Axis, Axis> make_axes(const ResizeSource& source, const std::uint8_t* dst, int dst_width,
                                int dst_height, Interpolation interpolation) {
  if (source.pixels == nullptr || dst == nullptr) {
    throw ConfigError("resize: null source or destination");
  }
  if (source.width <= 0 || source.height <= 0 || source.width > kMaxDimension ||
      source.height > kMaxDimension || source.stride < static_cast<std::size_t>(source.width) * 3) {
    throw ConfigError("resize: bad source image geometry " + std::to_string(source.width) + "x" +
                      std::to_string(source.height) + ", stride " + std::to_string(source.stride));
  }
  Axis ax = make_axis(source.x, source.w, source.width, dst_width, "x");
  Axis ay = make_axis(source.y, source.h, source.height, dst_height, "y");
  if (interpolation == Interpolation::kLinear) {
    ax.filter = ay.filter = AxisFilter::kLinear;
  } else if (ax.scale >= 1 && ay.scale >= 1) {
    ax.filter = ay.filter = AxisFilter::kBox;
  } else {
    ax.filter = ay.filter = AxisFilter::kTwoTapArea;
  }
  return {ax, ay};
}

// The arrays of one call in its scratch (see lay_out), their tables filled: the taps each axis
// uses, and whether it takes the fast 16-bit arithmetic.
struct ResizeTables {
  bool fast_x = true;
  bool fast_y = true;
  int taps_x = 1;
  int taps_y = 1;
  int pairs_x = 1;
  // Half the taps, in units of 1/256 of a level: what the truncating products lose on average.
  std::uint16_t bias_x = 0;
  std::uint16_t bias_y = 0;
  std::int32_t* offset_x = nullptr;
  std::uint16_t* weights_x = nullptr;
  std::uint16_t* pair_weights_x = nullptr;  // SSE2 with fast_x only
  std::int32_t* first_y = nullptr;
  std::uint16_t* weights_y = nullptr;
  std::uint16_t* ring = nullptr;
  const std::uint16_t** rows = nullptr;
  std::uint8_t* padded = nullptr;
  void* acc = nullptr;
};

// Binds the arrays laid out at `at` from `base` and fills both axes' weight tables, laid out for
// the tap bounds and then compacted to the taps used.
ResizeTables fill_tables(const Axis& ax, const Axis& ay, int bound_x, int bound_y, bool fast_x,
                         bool fast_y, std::uint8_t* base, const ScratchOffsets& at) {
  ResizeTables t;
  t.fast_x = fast_x;
  t.fast_y = fast_y;
  t.offset_x = reinterpret_cast<std::int32_t*>(base + at.offset_x);
  t.weights_x = reinterpret_cast<std::uint16_t*>(base + at.weights_x);
  t.pair_weights_x = reinterpret_cast<std::uint16_t*>(base + at.pairs_x);
  t.first_y = reinterpret_cast<std::int32_t*>(base + at.first_y);
  t.weights_y = reinterpret_cast<std::uint16_t*>(base + at.weights_y);
  t.ring = reinterpret_cast<std::uint16_t*>(base + at.ring);
  t.rows = reinterpret_cast<const std::uint16_t**>(base + at.rows);
  t.padded = base + at.padded;
  t.acc = base + at.acc;

  t.taps_x = fill_axis_table(ax, bound_x, 3, fast_x ? kHorizontalOne : kWeightOne, t.offset_x,
                             t.weights_x);
  t.taps_y = fill_axis_table(ay, bound_y, 1, kWeightOne, t.first_y, t.weights_y);
  compact_weights(t.weights_x, ax.size, bound_x, t.taps_x);
  compact_weights(t.weights_y, ay.size, bound_y, t.taps_y);
  t.pairs_x = (t.taps_x + 1) / 2;
#if FFCV_RESIZE_SSE2
  if (fast_x) expand_pair_weights(t.weights_x, t.taps_x, ax.size, t.pair_weights_x);
#endif
  t.bias_x = static_cast<std::uint16_t>(t.taps_x / 2);
  t.bias_y = static_cast<std::uint16_t>(t.taps_y / 2);
  return t;
}

// The horizontal pass of one call: region rows of the source into the ring of 16-bit rows (the
// rows one output row needs plus one read ahead).
class HorizontalPass {
 public:
  // `max_read_bound`: the bytes of the padded copy (lay_out's bound of a kernel's reads).
  HorizontalPass(const ResizeSource& source, const Axis& ax, const Axis& ay,
                 const ResizeTables& tables, std::size_t max_read_bound)
      : t_(tables),
        dst_width_(ax.size),
        region_columns_(ax.last - ax.first + 1),
        stride_(source.stride),
        ring_row_(static_cast<std::size_t>(3 * ax.size) + 8),
        ring_rows_(tables.taps_y + 1),
        max_read_bound_(max_read_bound),
        image_bytes_((source.height - 1) * source.stride +
                     3 * static_cast<std::size_t>(source.width)),
        region_offset_(ay.first * source.stride + 3 * static_cast<std::size_t>(ax.first)),
        region_origin_(source.pixels + region_offset_) {
    for (int d = 0; d < dst_width_; ++d) {
      max_read_ = std::max(max_read_, static_cast<std::size_t>(t_.offset_x[d]) +
                                          6 * static_cast<std::size_t>(t_.pairs_x - 1) + 8);
    }
  }

  // The ring row that holds region row `row`.
  std::uint16_t* slot(int row) const { return t_.ring + (row % ring_rows_) * ring_row_; }

  // Whether the kernel's loads from region row `row` would run past the image's last byte.
  bool needs_copy(int row) const {
    return region_offset_ + row * stride_ + max_read_ > image_bytes_;
  }

  // Region row `row`, copied first when it needs_copy.
  void one(int row) const {
    const std::uint8_t* src = region_origin_ + row * stride_;
    if (needs_copy(row)) {
      const std::size_t bytes = 3 * static_cast<std::size_t>(region_columns_);
      std::memcpy(t_.padded, src, bytes);
      std::memset(t_.padded + bytes, 0, max_read_bound_ - bytes);
      src = t_.padded;
    }
    std::uint16_t* out = slot(row);
    if (!t_.fast_x) {
      return horizontal_exact(src, t_.offset_x, t_.weights_x, t_.taps_x, dst_width_, out);
    }
#if FFCV_RESIZE_SSE2
    horizontal_fast_sse2<0>(src, 0, t_.offset_x, t_.pair_weights_x, t_.pairs_x, dst_width_,
                            t_.bias_x, out, nullptr);
#else
    horizontal_fast_scalar(src, t_.offset_x, t_.weights_x, t_.taps_x, dst_width_, t_.bias_x, out);
#endif
  }

  // Region rows `row` and `row` + 1 at once, sharing offset and weight loads; neither may need
  // the copy.
  void two(int row) const {
#if FFCV_RESIZE_SSE2
    const std::uint8_t* src = region_origin_ + row * stride_;
    const auto stride = static_cast<std::ptrdiff_t>(stride_);
    std::uint16_t* out0 = slot(row);
    std::uint16_t* out1 = slot(row + 1);
    const std::int32_t* offset_x = t_.offset_x;
    const std::uint16_t* pair_weights_x = t_.pair_weights_x;
    switch (t_.pairs_x) {
      case 1:
        return horizontal_fast_sse2<1>(src, stride, offset_x, pair_weights_x, 1, dst_width_,
                                       t_.bias_x, out0, out1);
      case 2:
        return horizontal_fast_sse2<2>(src, stride, offset_x, pair_weights_x, 2, dst_width_,
                                       t_.bias_x, out0, out1);
      case 3:
        return horizontal_fast_sse2<3>(src, stride, offset_x, pair_weights_x, 3, dst_width_,
                                       t_.bias_x, out0, out1);
      default:
        return horizontal_fast_sse2<0>(src, stride, offset_x, pair_weights_x, t_.pairs_x,
                                       dst_width_, t_.bias_x, out0, out1);
    }
#else
    one(row);
    one(row + 1);
#endif
  }

 private:
  ResizeTables t_;
  int dst_width_;
  int region_columns_;
  std::size_t stride_;
  std::size_t ring_row_;
  int ring_rows_;
  std::size_t max_read_bound_;
  std::size_t image_bytes_;
  std::size_t region_offset_;
  const std::uint8_t* region_origin_;
  std::size_t max_read_ = 0;  // bytes the kernels read from a row's first region pixel on
};

// The vertical pass of output row `r` from the ring rows in t.rows into `out`.
void vertical_row(const ResizeTables& t, int r, int row_length, std::uint8_t* out) {
  const std::uint16_t* const* rows = t.rows;
  const std::uint16_t* w = t.weights_y + static_cast<std::size_t>(r) * t.taps_y;
  const std::uint16_t bias_y = t.bias_y;
  if (!t.fast_y) {
    vertical_exact(rows, w, t.taps_y, row_length, static_cast<std::uint32_t*>(t.acc), out);
    return;
  }
  switch (t.taps_y) {
    case 1:
      vertical_fast_fixed<1>(rows, w, bias_y, row_length, out);
      break;
    case 2:
      vertical_fast_fixed<2>(rows, w, bias_y, row_length, out);
      break;
    case 3:
      vertical_fast_fixed<3>(rows, w, bias_y, row_length, out);
      break;
    case 4:
      vertical_fast_fixed<4>(rows, w, bias_y, row_length, out);
      break;
    default:
      vertical_fast_generic(rows, w, t.taps_y, bias_y, row_length,
                            static_cast<std::uint16_t*>(t.acc), out);
  }
}

// Both passes, output row after output row: the horizontal pass of the region rows that row
// needs and has not done yet (two at a time where it can), then the vertical pass.
void resample_rows(const HorizontalPass& horizontal, const ResizeTables& t, int region_rows,
                   std::uint8_t* dst, int dst_width, int dst_height) {
  const int row_length = 3 * dst_width;
  const bool pair_rows = FFCV_RESIZE_SSE2 && t.fast_x;
  int next_row = 0;  // the first region row the horizontal pass has not done
  for (int r = 0; r < dst_height; ++r) {
    const int top = t.first_y[r];
    const int end = std::min(top + t.taps_y, region_rows);
    int row = std::max(next_row, top);
    while (row < end) {
      if (pair_rows && row + 1 < region_rows && !horizontal.needs_copy(row + 1)) {
        horizontal.two(row);  // may do one row ahead, which the ring keeps for the next outputs
        row += 2;
      } else {
        horizontal.one(row);
        row += 1;
      }
    }
    next_row = std::max(next_row, row);
    for (int k = 0; k < t.taps_y; ++k) {
      t.rows[k] = horizontal.slot(std::min(top + k, region_rows - 1));
    }
    vertical_row(t, r, row_length, dst + static_cast<std::size_t>(r) * row_length);
  }
}

// resize_rgb with its scratch a growing vector or a caller's span.
template <typename Scratch>
void resize_with(const ResizeSource& source, std::uint8_t* dst, int dst_width, int dst_height,
                 Interpolation interpolation, Scratch& scratch) {
  const auto [ax, ay] = make_axes(source, dst, dst_width, dst_height, interpolation);
  // Each axis takes the fast 16-bit arithmetic unless it may have more than kMaxFastTaps taps.
  const int bound_x = tap_bound(ax);
  const int bound_y = tap_bound(ay);
  const bool fast_x = bound_x <= kMaxFastTaps;
  const bool fast_y = bound_y <= kMaxFastTaps;
  const int pairs_bound = (bound_x + 1) / 2;
  const int region_columns = ax.last - ax.first + 1;
  // Bytes a horizontal kernel may read from a row's first region pixel on (two-pixel loads).
  const std::size_t max_read_bound =
      3 * static_cast<std::size_t>(region_columns) + 6 * static_cast<std::size_t>(pairs_bound) + 8;

  // Everything lives in the scratch: tables laid out for the tap bounds (then compacted to the
  // taps used), the ring of horizontal-pass rows (the rows one output row needs plus one read
  // ahead), a padded copy of a source row, and a vertical-pass accumulator row.
  ScratchLayout layout;
  const ScratchOffsets at =
      lay_out(layout, dst_width, dst_height, bound_x, bound_y, fast_x, region_columns);
  const ResizeTables tables =
      fill_tables(ax, ay, bound_x, bound_y, fast_x, fast_y, layout.bind(scratch), at);
  const HorizontalPass horizontal(source, ax, ay, tables, max_read_bound);
  resample_rows(horizontal, tables, ay.last - ay.first + 1, dst, dst_width, dst_height);
}

}  // namespace

void resize_rgb(const ResizeSource& source, std::uint8_t* dst, int dst_width, int dst_height,
                Interpolation interpolation, std::vector<std::uint8_t>& scratch) {
  resize_with(source, dst, dst_width, dst_height, interpolation, scratch);
}

void resize_rgb(const ResizeSource& source, std::uint8_t* dst, int dst_width, int dst_height,
                Interpolation interpolation, std::span<std::uint8_t> scratch) {
  resize_with(source, dst, dst_width, dst_height, interpolation, scratch);
}

std::size_t resize_rgb_scratch_bytes(int max_source_width, int max_source_height, int dst_width,
                                     int dst_height) {
  // A region touches at most the whole source along an axis; a box filter has at most
  // floor(region / output) + 2 taps (tap_bound; one more here against rounding of the scale),
  // the other filters 2.
  const auto most_taps = [](int extent, int size) {
    const int source = std::max(extent, 1);
    return std::max(2, std::min(source, source / std::max(size, 1) + 3));
  };
  ScratchLayout layout;
  lay_out(layout, std::max(dst_width, 1), std::max(dst_height, 1),
          most_taps(max_source_width, dst_width), most_taps(max_source_height, dst_height), true,
          std::max(max_source_width, 1));
  return layout.bytes();
}

}  // namespace ffcv
