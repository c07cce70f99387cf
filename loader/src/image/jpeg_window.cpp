// Window decoding with the libjpeg API (see jpeg_window.hpp for what and why). The code run under
// Decompressor::run follows libjpeg_decompressor.hpp's rule: trivially destructible locals only.
#include "ffcv/image/jpeg_window.hpp"

#include <algorithm>
#include <string>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/errors.hpp"
#include "libjpeg_decompressor.hpp"

namespace ffcv {
namespace {

// The narrowest region handed to jpeg_crop_scanline (see decode_jpeg_window).
constexpr JDIMENSION kMinRegionWidth = 3;

// Rounds a / b up, for non-negative a and positive b.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Pixels [begin, end) of one axis of the scaled image.
struct PixelRange {
  JDIMENSION begin = 0;
  JDIMENSION end = 0;
};

// The scaled pixels that a window [start, start + size) of the full-size axis touches, plus one
// pixel of margin on each side, clamped to the scaled axis [0, limit).
PixelRange covering_range(int start, int size, int scale_num, JDIMENSION limit) {
  const std::int64_t first = std::int64_t{start} * scale_num / kDctScaleDenominator;
  const std::int64_t last =
      ceil_div((std::int64_t{start} + size) * scale_num, kDctScaleDenominator);
  PixelRange range;
  range.begin = static_cast<JDIMENSION>(std::max<std::int64_t>(0, first - 1));
  range.end = static_cast<JDIMENSION>(std::min<std::int64_t>(limit, last + 1));
  return range;
}

// Where the window lies in a decoded rectangle whose top-left corner is (origin_x, origin_y) of
// the image scaled by scale_num / 8.
DecodedWindow locate_window(const JpegWindowRequest& request, int scale_num, int origin_x,
                            int origin_y, int width, int height) {
  const double scale = static_cast<double>(scale_num) / kDctScaleDenominator;
  DecodedWindow window;
  window.scale_num = scale_num;
  window.width = width;
  window.height = height;
  window.crop_x = request.left * scale - origin_x;
  window.crop_y = request.top * scale - origin_y;
  window.crop_w = request.width * scale;
  window.crop_h = request.height * scale;
  return window;
}

// Colour spaces libjpeg converts to RGB itself.
bool libjpeg_converts_to_rgb(J_COLOR_SPACE space) {
  return space == JCS_YCbCr || space == JCS_RGB || space == JCS_GRAYSCALE;
}

// Room for `bytes` bytes of output: a vector grows (keeping its capacity for later calls), a
// caller's span either holds them or gives null.
std::uint8_t* make_room(std::vector<std::uint8_t>& out, std::size_t bytes) {
  out.resize(bytes);
  return out.data();
}
std::uint8_t* make_room(std::span<std::uint8_t> out, std::size_t bytes) {
  return bytes <= out.size() ? out.data() : nullptr;
}

[[noreturn]] void throw_too_small(std::size_t bytes, std::size_t room) {
  throw EncodeError("the decoded JPEG window needs " + std::to_string(bytes) +
                    " bytes, the caller's buffer holds " + std::to_string(room));
}

// Hands the fallback's pixels to the caller.
void store_pixels(std::vector<std::uint8_t>& pixels, std::vector<std::uint8_t>& out) {
  out.swap(pixels);
}
void store_pixels(const std::vector<std::uint8_t>& pixels, std::span<std::uint8_t> out) {
  if (pixels.size() > out.size()) throw_too_small(pixels.size(), out.size());
  std::copy(pixels.begin(), pixels.end(), out.begin());
}

// The fallback for colour spaces libjpeg cannot turn into RGB: a whole-image TurboJPEG decode at
// the chosen scale. TurboJPEG picks the smallest factor that reaches the requested size, which
// can be below scale_num for tiny images (same scaled size); the crop rect uses the one it took.
template <typename Out>
DecodedWindow decode_whole_image(std::span<const std::uint8_t> jpeg,
                                 const JpegWindowRequest& request, int scale_num, int image_width,
                                 int image_height, Out& out) {
  auto scaled = [](int size, int num) {
    return static_cast<int>(ceil_div(std::int64_t{size} * num, kDctScaleDenominator));
  };
  JpegDecodeOptions options;
  options.fast_dct = request.fast_dct;
  options.min_width = scaled(image_width, scale_num);
  options.min_height = scaled(image_height, scale_num);
  RgbImage image = decode_jpeg(jpeg, options);
  int used = scale_num;
  while (used > 1 && scaled(image_width, used - 1) == image.width &&
         scaled(image_height, used - 1) == image.height) {
    --used;
  }
  if (scaled(image_width, used) != image.width || scaled(image_height, used) != image.height) {
    throw EncodeError("JPEG decoded to an unexpected size " + std::to_string(image.width) + "x" +
                      std::to_string(image.height));
  }
  store_pixels(image.pixels, out);
  return locate_window(request, used, 0, 0, image.width, image.height);
}

}  // namespace

int choose_window_scale(int window_width, int window_height, int min_out_width, int min_out_height,
                        bool all_scales) {
  if (min_out_width <= 0 && min_out_height <= 0) return kDctScaleDenominator;
  for (int num = 1; num < kDctScaleDenominator; num = all_scales ? num + 1 : 2 * num) {
    if (std::int64_t{window_width} * num >= std::int64_t{min_out_width} * kDctScaleDenominator &&
        std::int64_t{window_height} * num >= std::int64_t{min_out_height} * kDctScaleDenominator) {
      return num;
    }
  }
  return kDctScaleDenominator;
}

std::uint64_t jpeg_window_bytes_bound(int frame_width, int frame_height, int min_out_width,
                                      int min_out_height, bool all_scales) {
  if (frame_width <= 0 || frame_height <= 0) return 0;
  const std::int64_t out_width = std::max(min_out_width, 0);
  const std::int64_t out_height = std::max(min_out_height, 0);
  const bool fixed_output = out_width > 0 || out_height > 0;
  std::uint64_t most = 0;
  for (int num = 1; num <= kDctScaleDenominator; num = all_scales ? num + 1 : 2 * num) {
    const std::int64_t width = ceil_div(std::int64_t{frame_width} * num, kDctScaleDenominator);
    const std::int64_t height = ceil_div(std::int64_t{frame_height} * num, kDctScaleDenominator);
    std::int64_t area = width * height;
    if (fixed_output && num > 1) {
      // choose_window_scale takes num only when the scale before it fell short of the output on
      // some axis, so the window spans fewer than 2 * out scaled pixels there: the region is at
      // most that, plus a margin pixel and a partly covered pixel on each side, plus (columns)
      // the widening to an iMCU boundary (at most 4 * num - 1: 4 is the largest sampling factor).
      const std::int64_t narrow =
          std::min(width, std::max<std::int64_t>(kMinRegionWidth, 2 * out_width + 4 * num + 3));
      const std::int64_t low = std::min(height, 2 * out_height + 4);
      area = std::max(narrow * height, width * low);
    }
    most = std::max(most, static_cast<std::uint64_t>(area) * 3);
  }
  return most;
}

namespace {

void check_request(const JpegWindowRequest& request) {
  if (request.top < 0 || request.left < 0 || request.width < 1 || request.height < 1) {
    throw ConfigError("bad JPEG crop window " + std::to_string(request.width) + "x" +
                      std::to_string(request.height) + " at (" + std::to_string(request.left) +
                      ", " + std::to_string(request.top) + ")");
  }
}

// Checks the image of the read header against the request's frame and window.
void check_frame(Decompressor& decompressor, const JpegWindowRequest& request, int image_width,
                 int image_height) {
  if (request.frame_width > 0 && request.frame_height > 0 &&
      (image_width != request.frame_width || image_height != request.frame_height)) {
    decompressor.abort();
    throw EncodeError("JPEG of " + std::to_string(image_width) + "x" +
                      std::to_string(image_height) + " does not match its metadata size " +
                      std::to_string(request.frame_width) + "x" +
                      std::to_string(request.frame_height));
  }
  if (std::int64_t{request.left} + request.width > image_width ||
      std::int64_t{request.top} + request.height > image_height) {
    decompressor.abort();
    throw EncodeError("JPEG crop window " + std::to_string(request.width) + "x" +
                      std::to_string(request.height) + " at (" + std::to_string(request.left) +
                      ", " + std::to_string(request.top) + ") exceeds the " +
                      std::to_string(image_width) + "x" + std::to_string(image_height) + " frame");
  }
}

// What decoding the window's region left: filled in under run(), read after it, so plain values
// only.
struct RegionDecode {
  JDIMENSION x_offset = 0;
  JDIMENSION out_width = 0;
  PixelRange rows;
  std::size_t needed = 0;  // bytes of the decoded region
  bool no_room = false;    // the caller's span cannot hold them
  bool complete = false;
};

// Under run(): sets the scaled RGB output and starts decompressing.
void start_decompress(j_decompress_ptr cinfo, const JpegWindowRequest& request, int scale_num) {
  cinfo->scale_num = static_cast<unsigned int>(scale_num);
  cinfo->scale_denom = kDctScaleDenominator;
  cinfo->dct_method = request.fast_dct ? JDCT_IFAST : JDCT_ISLOW;
  cinfo->do_fancy_upsampling = TRUE;
  cinfo->out_color_space = JCS_EXT_RGB;
  jpeg_start_decompress(cinfo);
}

// Under run(), once decompressing started: the region's rows and columns (set as the columns
// libjpeg crops to) into `region`.
void crop_region(j_decompress_ptr cinfo, const JpegWindowRequest& request, int scale_num,
                 RegionDecode& region) {
  PixelRange columns = covering_range(request.left, request.width, scale_num, cinfo->output_width);
  // A region 2 px wide (a 1-px window at the frame's edge) holds one chroma column of a 4:2:0
  // image, which libjpeg-turbo 2.1's h2v2 fancy upsampler gets wrong; take one more column.
  if (columns.end - columns.begin < kMinRegionWidth && cinfo->output_width >= kMinRegionWidth) {
    if (columns.begin == 0) {
      columns.end = kMinRegionWidth;
    } else {
      columns.begin = columns.end - kMinRegionWidth;
    }
  }
  region.rows = covering_range(request.top, request.height, scale_num, cinfo->output_height);
  region.x_offset = columns.begin;
  region.out_width = columns.end - columns.begin;
  // Aligns x_offset down to an iMCU column and widens out_width by as much; the right edge
  // stays. A no-op request (the whole width) is left out.
  if (region.out_width < cinfo->output_width) {
    jpeg_crop_scanline(cinfo, &region.x_offset, &region.out_width);
  }
}

// Under run(): reads the scanlines up to rows.end into `pixels` (rows of `row_bytes`, the first
// one rows.begin). False when libjpeg returned no rows, which cannot happen in memory.
bool read_rows(j_decompress_ptr cinfo, const PixelRange& rows, std::size_t row_bytes,
               std::uint8_t* pixels) {
  constexpr int kRowBatch = 16;
  JSAMPROW row_pointers[kRowBatch];
  while (cinfo->output_scanline < rows.end) {
    const JDIMENSION first = cinfo->output_scanline;
    const JDIMENSION count = std::min<JDIMENSION>(kRowBatch, rows.end - first);
    for (JDIMENSION i = 0; i < count; ++i) {
      row_pointers[i] = pixels + (first - rows.begin + i) * row_bytes;
    }
    if (jpeg_read_scanlines(cinfo, row_pointers, count) == 0) return false;
  }
  return true;
}

// decode_jpeg_window into a growing vector or a caller's span.
template <typename Out>
DecodedWindow decode_window_into(std::span<const std::uint8_t> jpeg,
                                 const JpegWindowRequest& request, Out& out) {
  check_request(request);
  Decompressor& decompressor = read_header(jpeg);
  j_decompress_ptr cinfo = decompressor.cinfo();
  const int image_width = static_cast<int>(cinfo->image_width);
  const int image_height = static_cast<int>(cinfo->image_height);
  check_frame(decompressor, request, image_width, image_height);
  const int scale_num = choose_window_scale(request.width, request.height, request.min_out_width,
                                            request.min_out_height, request.all_scales);
  if (!libjpeg_converts_to_rgb(cinfo->jpeg_color_space)) {
    decompressor.abort();
    return decode_whole_image(jpeg, request, scale_num, image_width, image_height, out);
  }

  RegionDecode region;
  const bool decoded = decompressor.run([&] {
    start_decompress(cinfo, request, scale_num);
    crop_region(cinfo, request, scale_num, region);
    const PixelRange& rows = region.rows;
    if (rows.begin > 0 && jpeg_skip_scanlines(cinfo, rows.begin) != rows.begin) return;
    const std::size_t row_bytes = std::size_t{region.out_width} * 3;
    region.needed = row_bytes * (rows.end - rows.begin);
    std::uint8_t* pixels = make_room(out, region.needed);
    if (pixels == nullptr) {
      region.no_room = true;
      jpeg_abort_decompress(cinfo);
      return;
    }
    if (!read_rows(cinfo, rows, row_bytes, pixels)) return;
    // Stops here: the rows below the window are never decoded.
    jpeg_abort_decompress(cinfo);
    region.complete = true;
  });
  if (!decoded) fail_and_discard("JPEG decoding failed: ");
  if (region.no_room) throw_too_small(region.needed, out.size());
  if (!region.complete) {
    discard_thread_decompressor();
    throw EncodeError("JPEG decoding failed: the decoder returned fewer rows than the frame has");
  }
  return locate_window(request, scale_num, static_cast<int>(region.x_offset),
                       static_cast<int>(region.rows.begin), static_cast<int>(region.out_width),
                       static_cast<int>(region.rows.end - region.rows.begin));
}

}  // namespace

DecodedWindow decode_jpeg_window(std::span<const std::uint8_t> jpeg,
                                 const JpegWindowRequest& request, std::vector<std::uint8_t>& out) {
  return decode_window_into(jpeg, request, out);
}

DecodedWindow decode_jpeg_window(std::span<const std::uint8_t> jpeg,
                                 const JpegWindowRequest& request, std::span<std::uint8_t> out) {
  return decode_window_into(jpeg, request, out);
}

}  // namespace ffcv
