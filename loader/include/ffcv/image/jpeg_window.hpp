// Decoding only a crop window of a JPEG, at a reduced DCT scale when the caller will shrink it.
//
// Why: FFCV's RandomResizedCrop decodes the whole JPEG, then area-resizes the crop. Pixels outside
// the crop, and full resolution when the crop is shrunk 2x or more, are wasted work. This decoder
// uses the libjpeg API (libjpeg-turbo 2.1 has no cropped TurboJPEG call) to
//   - pick the DCT scale M/8 (by default M = 1, 2, 4 or 8: the fast ones), the smallest whose
//     scaled window still has at least the caller's output size, so that the later area resize
//     only reduces;
//   - skip the rows above the window (jpeg_skip_scanlines: whole iMCU rows are only
//     entropy-decoded, not reconstructed),
//   - reconstruct only the iMCU columns that cover the window (jpeg_crop_scanline),
//   - stop after the window's last row (the rest of the file is not even entropy-decoded).
// Entropy decoding of every row down to the window's bottom edge, at full width, cannot be
// avoided in a baseline JPEG. Measured on ImageNet-sized 4:2:0 files (0.15 Mpx, one core) with
// 35%-area windows: 1.49x the images/s of a whole TurboJPEG decode, 1.2x for decode + INTER_AREA
// resize to 224 or 160; larger with DCT scaling on larger sources (1/2: 1.66x, 1/8: 1.9x).
// Progressive and multi-scan files work too but gain less: libjpeg entropy-decodes the whole file
// into a coefficient buffer before the first row, so only the reconstruction is saved.
//
// Exactness: with the same IDCT (fast_dct) the window's pixels are bit-identical to the same
// pixels of a whole-image decode at the same scale (TurboJPEG's tjDecompress2 with TJFLAG_FASTDCT
// or TJFLAG_ACCURATEDCT, fancy upsampling on). That needs the one-pixel margin described at
// DecodedWindow: libjpeg's fancy chroma upsampling (4:2:0, 4:2:2, 4:4:0) reads the neighbouring
// chroma sample, and at the edge of a cropped region it replicates the edge sample instead, so
// the outermost decoded column differs from a whole-image decode. The margin moves that column
// outside the window.
//
// Colour: YCbCr, RGB and grayscale JPEGs (any sampling factors libjpeg accepts, baseline,
// progressive or multi-scan) are decoded here to packed RGB; grayscale is replicated to R = G = B
// by libjpeg's colour converter, as TurboJPEG's TJPF_RGB does. CMYK and YCCK (and other colour
// spaces libjpeg cannot turn into RGB) fall back to ffcv::decode_jpeg, a whole-image TurboJPEG
// decode at the same scale; TurboJPEG 2.1 cannot convert CMYK to RGB either, so for those files
// the fallback ends in the same EncodeError as the rest of the loader (FFCV's writer never stores
// CMYK JPEGs: it re-encodes every image as YCbCr 4:2:0).
//
// Errors: libjpeg's fatal errors become ffcv::EncodeError (never exit()). Its warnings do not
// abort: a file with corrupt entropy data or a premature end still decodes (libjpeg fills what is
// missing with grey), as with decode_jpeg / TurboJPEG; warnings are not printed.
//
// Threads: each thread keeps its own libjpeg decompressor (thread_local), reused across calls and
// rebuilt after an error; there is no shared state, so concurrent calls from different threads
// are safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ffcv {

// The denominator of libjpeg's DCT scaling: a JPEG decodes at scale_num / kDctScaleDenominator.
inline constexpr int kDctScaleDenominator = 8;

struct JpegWindowRequest {
  // The crop window in full-resolution pixel coordinates; it must lie inside the JPEG's frame.
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  // The size the caller will resize the window to. The decoder picks the smallest allowed scale
  // M/8 (see all_scales) with width * M / 8 >= min_out_width and height * M / 8 >= min_out_height
  // (exactly, as fractions); when no M <= 8 is enough (an upscale) or both are <= 0, it decodes
  // at full size (M = 8).
  // Pass the window's own size to turn DCT scaling off (exact FFCV parity).
  int min_out_width = 0;
  int min_out_height = 0;
  // The fast integer IDCT (JDCT_IFAST, FFCV's TJFLAG_FASTDCT); false for the accurate one.
  // libjpeg only has this choice for the 8x8 IDCT; reduced scales use its scaled IDCTs either way.
  bool fast_dct = true;
  // False (default): only the scales 1/8, 1/4, 1/2 and 1 are used, those libjpeg-turbo has SIMD
  // IDCTs for (at which 4:2:0 chroma also needs no upsampling). The others run plain-C IDCTs:
  // measured on ImageNet-sized 4:2:0 files (one core, 35%-area windows, img/s relative to a full
  // TurboJPEG decode) 1/8 1.90x, 1/4 1.77x, 3/8 1.55x, 1/2 1.66x, 5/8 1.15x, 6/8 1.09x, 7/8 0.92x,
  // 1 1.49x: 5/8-7/8 are slower than no scaling, and 3/8 slower than the larger 1/2.
  // True: any M/8, for callers that want the fewest pixels whatever the decode cost.
  bool all_scales = false;
  // The frame size the sample's metadata states; a JPEG of another size is refused (see
  // jpeg_codec.hpp). 0: not checked.
  int frame_width = 0;
  int frame_height = 0;
};

// What decode_jpeg_window wrote into `out`.
//
// `out` holds `height` rows of `width` packed RGB pixels: a rectangle of the JPEG decoded at
// scale_num/8 (whose size is ceil(W * scale_num / 8) x ceil(H * scale_num / 8)). In scaled pixel
// coordinates the requested window spans [left * s, (left + width) * s) x [top * s, ...) with
// s = scale_num / 8; in `out` it is the rectangle (crop_x, crop_y, crop_w, crop_h), fractional
// when the window's edges do not fall on the scaled grid. `out` always contains every pixel the
// window touches (floor of its start to ceil of its end), plus:
//   - rows: one more row above and below, where the image has them (rows above are skipped with
//     jpeg_skip_scanlines; decoding stops after the last row). The vertical margin is not needed
//     for exactness (libjpeg keeps the upsampler's context rows when skipping) but keeps the
//     contract the same on all four sides, for filters that read one pixel beyond the window.
//   - columns: one more column on each side where the image has it (for fancy upsampling, see
//     above), then widened on the left to the iMCU column boundary that jpeg_crop_scanline
//     requires (8 * max horizontal sampling factor * scale_num / 8 pixels, e.g. 16 px at full
//     scale for 4:2:0, 8 px for 4:4:4 and grayscale). So crop_x can be up to one iMCU width + 1.
//     The region is at least 3 px wide where the image is: a 1-px window at the frame's edge gets
//     one more column inwards, because libjpeg-turbo 2.1's 4:2:0 fancy upsampler reconstructs a
//     2-px region (a single chroma column) differently from a whole decode.
// Only pixels inside the window are guaranteed to equal a whole-image decode; the margins may
// differ in their outermost column.
//
// In the fallback (CMYK etc.) `out` is the whole image at the chosen scale, and the crop rect
// locates the window in it the same way.
struct DecodedWindow {
  int scale_num = kDctScaleDenominator;  // DCT scale used: scale_num / 8
  int width = 0;                         // size of `out` in pixels (packed RGB)
  int height = 0;
  double crop_x = 0;  // the requested window inside `out`, in scaled pixel coordinates
  double crop_y = 0;
  double crop_w = 0;
  double crop_h = 0;
};

// The scale numerator decode_jpeg_window picks for a window of window_width x window_height to be
// resized to at least min_out_width x min_out_height (see JpegWindowRequest): 1, 2, 4 or 8, or
// with all_scales any of 1..8.
int choose_window_scale(int window_width, int window_height, int min_out_width, int min_out_height,
                        bool all_scales = false);

// Decodes the part of `jpeg` that covers request's window, at the scale choose_window_scale picks,
// into `out` (resized to width * height * 3 bytes; its capacity is reused, so a caller that keeps
// `out` across calls allocates only when a window is larger than any before).
// Throws EncodeError when the data cannot be decoded or the window lies outside the frame, and
// ConfigError for a window with a negative origin or a size below 1.
DecodedWindow decode_jpeg_window(std::span<const std::uint8_t> jpeg,
                                 const JpegWindowRequest& request, std::vector<std::uint8_t>& out);

// The same into a caller's buffer that does not grow, for callers that size their memory once:
// the region is written to the first width * height * 3 bytes of `out`. Throws EncodeError, as
// above, and when `out` is too small for the region (jpeg_window_bytes_bound gives a size that
// always suffices, except for the whole-image fallback, which needs the whole scaled image).
// Same bytes as the vector overload.
DecodedWindow decode_jpeg_window(std::span<const std::uint8_t> jpeg,
                                 const JpegWindowRequest& request, std::span<std::uint8_t> out);

// The most bytes decode_jpeg_window writes for any window of a frame_width x frame_height JPEG
// (libjpeg-converted colour spaces), when every request asks for the same min_out_width x
// min_out_height (0 x 0: requests that vary, or DCT scaling off; the bound then covers every
// scale, i.e. the whole frame) and the same all_scales.
std::uint64_t jpeg_window_bytes_bound(int frame_width, int frame_height, int min_out_width,
                                      int min_out_height, bool all_scales = false);

}  // namespace ffcv
