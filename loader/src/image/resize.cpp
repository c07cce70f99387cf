// Separable RGB resampling (area / bilinear) in 16-bit fixed point; see resize.hpp.
//
// Per call: one weight table per axis (first source index and Q16 weights of every output
// index, rounded with error diffusion so each output's weights sum to exactly 1), then for each
// output row the horizontal pass of the source rows it needs (each source row once, into a ring
// of 16-bit rows holding value * 256) and the vertical pass of those rows into the output.
//
// Arithmetic of the fast path (at most kMaxFastTaps taps per axis): a product is the high half
// of a 16x16-bit multiply (SSE2 pmulhuw; the scalar path computes the same bits), so each tap
// truncates by less than 1/256 of a level. Adding half the tap count back makes the error before
// the final rounding at most (taps_x + taps_y) / 512 of a level, under 0.03 for 10x downscales
// and never 0.25 or more, so constant images stay constant and results are within 1 of the exact
// filter. Beyond that many taps (shrinking by more than ~60x) the exact path accumulates full
// 32-bit products instead.
#include "ffcv/resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ffcv/errors.hpp"

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
constexpr int kMaxFastTaps = 64;
constexpr double kEdgeTolerance = 1e-6;     // how far a region may stick out of the image
constexpr double kCoverageEpsilon = 1e-9;   // coverage below this is treated as none
constexpr int kMaxDimension = 1 << 24;      // keeps every size and index in an int
constexpr std::size_t kAlignment = 64;

enum class AxisFilter {
  kBox,         // exact coverage of [start + d*s, start + (d+1)*s)
  kTwoTapArea,  // OpenCV INTER_AREA's rule for a shrinking axis when the other one grows
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
  double scale() const { return length / size; }
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
  const double scale = axis.scale();
  OutputTaps taps;
  if (axis.filter == AxisFilter::kBox) {
    taps.box = true;
    taps.a = axis.start + d * scale;
    taps.b = d + 1 == axis.size ? axis.start + axis.length : axis.start + (d + 1) * scale;
    const int first = std::clamp(static_cast<int>(std::floor(taps.a + kCoverageEpsilon)),
                                 axis.first, axis.last);
    const int last = std::clamp(static_cast<int>(std::ceil(taps.b - kCoverageEpsilon)) - 1,
                                first, axis.last);
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
    // The share of the output cell that lies beyond source pixel `index`, modulo 1, as OpenCV
    // computes it for INTER_AREA when either axis grows.
    index = std::floor(axis.start + d * scale);
    const double beyond = (axis.start + (d + 1) * scale - (index + 1)) / scale;
    fraction = beyond <= 0 ? 0 : beyond - std::floor(beyond);
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

double tap_weight(const OutputTaps& taps, int k) {
  if (taps.box) {
    const double lo = std::max(taps.a, static_cast<double>(taps.first + k));
    const double hi = std::min(taps.b, static_cast<double>(taps.first + k + 1));
    return std::max(0.0, hi - lo) / (taps.b - taps.a);
  }
  return k == 0 ? 1 - taps.next_weight : taps.next_weight;
}

int max_taps(const Axis& axis) {
  int taps = 1;
  for (int d = 0; d < axis.size; ++d) taps = std::max(taps, output_taps(axis, d).count);
  return taps;
}

// Fills first[d] (relative to axis.first) and weights[d * taps + k] (Q16, summing to 1 with
// error diffusion, zero beyond the output's own taps; a lone weight of 1 is stored as 65535).
void fill_axis_table(const Axis& axis, int taps, std::int32_t* first, std::uint16_t* weights) {
  for (int d = 0; d < axis.size; ++d) {
    const OutputTaps t = output_taps(axis, d);
    first[d] = t.first - axis.first;
    std::uint16_t* w = weights + static_cast<std::size_t>(d) * taps;
    double cumulative = 0;
    std::int64_t previous = 0;
    for (int k = 0; k < taps; ++k) {
      std::int64_t q = previous;
      if (k < t.count) {
        cumulative += tap_weight(t, k);
        q = k + 1 == t.count ? kWeightOne : std::llround(cumulative * kWeightOne);
        q = std::clamp(q, previous, kWeightOne);
      }
      w[k] = static_cast<std::uint16_t>(std::min<std::int64_t>(q - previous, kWeightOne - 1));
      previous = q;
    }
  }
}

inline std::uint16_t mul_high(std::uint16_t a, std::uint16_t b) {
  return static_cast<std::uint16_t>((static_cast<std::uint32_t>(a) * b) >> 16);
}

// --- Horizontal pass: one source row (8-bit RGB from the region's first column) to one row of
// dst_width*3 values * 256 (16-bit). `out` has room for one element more (the SIMD store).

#if FFCV_RESIZE_SSE2
// Expanded weights for the SIMD kernel: per output and pair of taps, eight 16-bit lanes
// (w0, w0, w0, w1, w1, w1, 0, 0) matching one 8-byte load of two RGB pixels.
void expand_pair_weights(const std::uint16_t* weights, int taps, int size, std::uint16_t* out) {
  const int pairs = (taps + 1) / 2;
  for (int d = 0; d < size; ++d) {
    for (int j = 0; j < pairs; ++j) {
      const std::uint16_t* w = weights + static_cast<std::size_t>(d) * taps;
      const std::uint16_t w0 = w[2 * j];
      const std::uint16_t w1 = 2 * j + 1 < taps ? w[2 * j + 1] : 0;
      std::uint16_t* lanes = out + (static_cast<std::size_t>(d) * pairs + j) * 8;
      lanes[0] = lanes[1] = lanes[2] = w0;
      lanes[3] = lanes[4] = lanes[5] = w1;
      lanes[6] = lanes[7] = 0;
    }
  }
}

// kPairs > 0: the pair count fixed at compile time (fully unrolled); 0: `pairs` at run time.
template <int kPairs>
void horizontal_fast_sse2(const std::uint8_t* src, const std::int32_t* first,
                          const std::uint16_t* pair_weights, int pairs, int dst_width,
                          std::uint16_t bias, std::uint16_t* out) {
  const int n = kPairs > 0 ? kPairs : pairs;
  const __m128i zero = _mm_setzero_si128();
  const __m128i initial = _mm_setr_epi16(static_cast<short>(bias), static_cast<short>(bias),
                                         static_cast<short>(bias), 0, 0, 0, 0, 0);
  const __m128i* w = reinterpret_cast<const __m128i*>(pair_weights);
  for (int d = 0; d < dst_width; ++d) {
    const std::uint8_t* p = src + 3 * static_cast<std::ptrdiff_t>(first[d]);
    __m128i acc = initial;
    for (int j = 0; j < n; ++j) {
      // Two pixels (6 bytes, 2 more read and weighted 0), widened to value * 256.
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 6 * j));
      acc = _mm_add_epi16(acc, _mm_mulhi_epu16(_mm_unpacklo_epi8(zero, bytes), w[j]));
    }
    w += n;
    acc = _mm_add_epi16(acc, _mm_srli_si128(acc, 6));  // lanes 0-2 += lanes 3-5
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 3 * d), acc);
  }
}
#endif

// The same bits as the SIMD kernel, one channel at a time (the portable fallback).
[[maybe_unused]] void horizontal_fast_scalar(const std::uint8_t* src, const std::int32_t* first,
                                             const std::uint16_t* weights, int taps,
                                             int dst_width, std::uint16_t bias,
                                             std::uint16_t* out) {
  for (int d = 0; d < dst_width; ++d) {
    const std::uint8_t* p = src + 3 * static_cast<std::ptrdiff_t>(first[d]);
    const std::uint16_t* w = weights + static_cast<std::size_t>(d) * taps;
    for (int c = 0; c < 3; ++c) {
      std::uint16_t acc = bias;
      for (int k = 0; k < taps; ++k) {
        acc = static_cast<std::uint16_t>(acc +
                                         mul_high(static_cast<std::uint16_t>(p[3 * k + c] << 8),
                                                  w[k]));
      }
      out[3 * d + c] = acc;
    }
  }
}

// Full 32-bit products, rounded once to value * 256 (for very many taps).
void horizontal_exact(const std::uint8_t* src, const std::int32_t* first,
                      const std::uint16_t* weights, int taps, int dst_width,
                      std::uint16_t* out) {
  for (int d = 0; d < dst_width; ++d) {
    const std::uint8_t* p = src + 3 * static_cast<std::ptrdiff_t>(first[d]);
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

void vertical_fast_generic(const std::uint16_t* const* rows, const std::uint16_t* weights,
                           int taps, std::uint16_t bias, int length,
                           std::uint16_t* __restrict acc, std::uint8_t* __restrict out) {
  const std::uint16_t initial = static_cast<std::uint16_t>(bias + 128);
  for (int i = 0; i < length; ++i) acc[i] = initial;
  for (int k = 0; k < taps; ++k) {
    const std::uint16_t* __restrict row = rows[k];
    const std::uint16_t w = weights[k];
    for (int i = 0; i < length; ++i) acc[i] = static_cast<std::uint16_t>(acc[i] + mul_high(row[i], w));
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

// Carves aligned arrays out of the scratch vector.
class ScratchLayout {
 public:
  template <typename T>
  std::size_t add(std::size_t count) {
    const std::size_t offset = size_;
    size_ += (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    return offset;
  }
  std::uint8_t* bind(std::vector<std::uint8_t>& scratch) const {
    if (scratch.size() < size_ + kAlignment) scratch.resize(size_ + kAlignment);
    const auto address = reinterpret_cast<std::uintptr_t>(scratch.data());
    return scratch.data() + ((kAlignment - address % kAlignment) % kAlignment);
  }

 private:
  std::size_t size_ = 0;
};

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
  axis.first = std::clamp(static_cast<int>(std::floor(axis.start + kCoverageEpsilon)), 0,
                          extent - 1);
  axis.last = std::clamp(static_cast<int>(std::ceil(axis.start + axis.length - kCoverageEpsilon)) - 1,
                         axis.first, extent - 1);
  axis.size = size;
  return axis;
}

}  // namespace

void resize_rgb(const ResizeSource& source, std::uint8_t* dst, int dst_width, int dst_height,
                Interpolation interpolation, std::vector<std::uint8_t>& scratch) {
  if (source.pixels == nullptr || dst == nullptr) {
    throw ConfigError("resize: null source or destination");
  }
  if (source.width <= 0 || source.height <= 0 || source.width > kMaxDimension ||
      source.height > kMaxDimension ||
      source.stride < static_cast<std::size_t>(source.width) * 3) {
    throw ConfigError("resize: bad source image geometry " + std::to_string(source.width) + "x" +
                      std::to_string(source.height) + ", stride " +
                      std::to_string(source.stride));
  }
  Axis ax = make_axis(source.x, source.w, source.width, dst_width, "x");
  Axis ay = make_axis(source.y, source.h, source.height, dst_height, "y");
  if (interpolation == Interpolation::kLinear) {
    ax.filter = ay.filter = AxisFilter::kLinear;
  } else if (ax.scale() >= 1 && ay.scale() >= 1) {
    ax.filter = ay.filter = AxisFilter::kBox;
  } else {
    ax.filter = ax.scale() >= 1 ? AxisFilter::kTwoTapArea : AxisFilter::kBox;
    ay.filter = ay.scale() >= 1 ? AxisFilter::kTwoTapArea : AxisFilter::kBox;
  }

  const int taps_x = max_taps(ax);
  const int taps_y = max_taps(ay);
  const bool fast = taps_x <= kMaxFastTaps && taps_y <= kMaxFastTaps;
  const int pairs_x = (taps_x + 1) / 2;
  const int region_columns = ax.last - ax.first + 1;
  const int region_rows = ay.last - ay.first + 1;
  const int row_length = 3 * dst_width;
  const std::size_t ring_row = static_cast<std::size_t>(row_length) + 8;
  // Bytes a horizontal kernel may read from a row's first region pixel on (two-pixel loads).
  const std::size_t max_read_bound = 3 * static_cast<std::size_t>(region_columns) +
                                     6 * static_cast<std::size_t>(pairs_x) + 8;

  ScratchLayout layout;
  const std::size_t at_first_x = layout.add<std::int32_t>(dst_width);
  const std::size_t at_weights_x = layout.add<std::uint16_t>(std::size_t{1} * dst_width * taps_x);
  const std::size_t at_pairs_x =
      layout.add<std::uint16_t>(FFCV_RESIZE_SSE2 && fast ? std::size_t{8} * dst_width * pairs_x : 0);
  const std::size_t at_first_y = layout.add<std::int32_t>(dst_height);
  const std::size_t at_weights_y =
      layout.add<std::uint16_t>(std::size_t{1} * dst_height * taps_y);
  const std::size_t at_ring = layout.add<std::uint16_t>(ring_row * taps_y);
  const std::size_t at_rows = layout.add<const std::uint16_t*>(taps_y);
  const std::size_t at_padded = layout.add<std::uint8_t>(max_read_bound);
  const std::size_t at_acc = layout.add<std::uint32_t>(row_length);
  std::uint8_t* base = layout.bind(scratch);
  auto* first_x = reinterpret_cast<std::int32_t*>(base + at_first_x);
  auto* weights_x = reinterpret_cast<std::uint16_t*>(base + at_weights_x);
  [[maybe_unused]] auto* pairs_weights_x = reinterpret_cast<std::uint16_t*>(base + at_pairs_x);
  auto* first_y = reinterpret_cast<std::int32_t*>(base + at_first_y);
  auto* weights_y = reinterpret_cast<std::uint16_t*>(base + at_weights_y);
  auto* ring = reinterpret_cast<std::uint16_t*>(base + at_ring);
  auto* rows = reinterpret_cast<const std::uint16_t**>(base + at_rows);
  std::uint8_t* padded = base + at_padded;
  void* acc = base + at_acc;

  fill_axis_table(ax, taps_x, first_x, weights_x);
  fill_axis_table(ay, taps_y, first_y, weights_y);
#if FFCV_RESIZE_SSE2
  if (fast) expand_pair_weights(weights_x, taps_x, dst_width, pairs_weights_x);
#endif
  std::size_t max_read = 0;
  for (int d = 0; d < dst_width; ++d) {
    max_read = std::max(max_read, 3 * static_cast<std::size_t>(first_x[d]) +
                                      6 * static_cast<std::size_t>(pairs_x - 1) + 8);
  }
  const std::uint8_t* image_end =
      source.pixels + (source.height - 1) * source.stride + 3 * static_cast<std::size_t>(source.width);
  const auto bias_x = static_cast<std::uint16_t>(taps_x / 2);
  const auto bias_y = static_cast<std::uint16_t>(taps_y / 2);

  auto horizontal = [&](const std::uint8_t* src, std::uint16_t* out) {
    if (src + max_read > image_end) {  // the loads would run past the image: copy the row
      const std::size_t bytes = 3 * static_cast<std::size_t>(region_columns);
      std::memcpy(padded, src, bytes);
      std::memset(padded + bytes, 0, max_read_bound - bytes);
      src = padded;
    }
    if (!fast) {
      horizontal_exact(src, first_x, weights_x, taps_x, dst_width, out);
      return;
    }
#if FFCV_RESIZE_SSE2
    switch (pairs_x) {
      case 1:
        return horizontal_fast_sse2<1>(src, first_x, pairs_weights_x, 1, dst_width, bias_x, out);
      case 2:
        return horizontal_fast_sse2<2>(src, first_x, pairs_weights_x, 2, dst_width, bias_x, out);
      case 3:
        return horizontal_fast_sse2<3>(src, first_x, pairs_weights_x, 3, dst_width, bias_x, out);
      case 4:
        return horizontal_fast_sse2<4>(src, first_x, pairs_weights_x, 4, dst_width, bias_x, out);
      default:
        return horizontal_fast_sse2<0>(src, first_x, pairs_weights_x, pairs_x, dst_width, bias_x,
                                       out);
    }
#else
    horizontal_fast_scalar(src, first_x, weights_x, taps_x, dst_width, bias_x, out);
#endif
  };

  const std::uint8_t* region_origin =
      source.pixels + ay.first * source.stride + 3 * static_cast<std::size_t>(ax.first);
  int next_row = 0;  // the next region row the horizontal pass has not seen
  for (int r = 0; r < dst_height; ++r) {
    const int top = first_y[r];
    const int end = std::min(top + taps_y, region_rows);
    for (int row = std::max(next_row, top); row < end; ++row) {
      horizontal(region_origin + row * source.stride, ring + (row % taps_y) * ring_row);
    }
    next_row = std::max(next_row, end);
    for (int k = 0; k < taps_y; ++k) {
      rows[k] = ring + (std::min(top + k, region_rows - 1) % taps_y) * ring_row;
    }
    const std::uint16_t* w = weights_y + static_cast<std::size_t>(r) * taps_y;
    std::uint8_t* out = dst + static_cast<std::size_t>(r) * row_length;
    if (!fast) {
      vertical_exact(rows, w, taps_y, row_length, static_cast<std::uint32_t*>(acc), out);
      continue;
    }
    switch (taps_y) {
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
        vertical_fast_generic(rows, w, taps_y, bias_y, row_length,
                              static_cast<std::uint16_t*>(acc), out);
    }
  }
}

}  // namespace ffcv
