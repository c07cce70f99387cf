// JPEG encoding and whole-image decoding with libjpeg-turbo (TurboJPEG API).
//
// Encoding matches what FFCV's writer produces through OpenCV: baseline, 4:2:0 chroma, standard
// Huffman tables, the given quality, and the accurate forward DCT, which OpenCV and PIL use (for
// the same pixels, the same coefficients; TurboJPEG's own default is the fast DCT, measured no
// faster here and 0.2 dB worse). Decoding uses the fast integer IDCT as FFCV's decoder does,
// so pixels match Python FFCV's. One TurboJPEG handle per thread is reused across calls; this
// file is the project's only user of TurboJPEG's handles (the window decoder in jpeg_window.hpp
// drives libjpeg directly).
//
// What a bad JPEG is, for every decoder (image, random_resized_crop, center_crop, the multi-view
// decoder), the writer's check of source images and `ffcv inspect --verify` alike:
//  - libjpeg cannot decode it (not a JPEG, unsupported, truncated inside its headers);
//  - libjpeg warns about what it reads: corrupt entropy data, a premature end of the data,
//    extraneous bytes before a marker. libjpeg would carry on and fill the rest with gray; here
//    each warning is an error (TurboJPEG's TJFLAG_STOPONWARNING, and a warning hook that fails
//    in the window decoder), so a damaged image is never decoded into a mostly-gray one;
//  - its frame size differs from the size its sample's metadata states;
//  - it is CMYK or YCCK (no conversion to RGB).
// A window decoder reads the data only up to the window's last row, so damage below it goes
// unnoticed there; the writer and `inspect --verify` decode every byte (validate_jpeg).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ffcv/format/value.hpp"
#include "ffcv/util/byte_buffer_pool.hpp"

namespace ffcv {

struct JpegInfo {
  int width = 0;
  int height = 0;
  // False for CMYK/YCCK files, which TurboJPEG cannot convert to RGB.
  bool rgb_convertible = true;
};

struct JpegDecodeOptions {
  // The fast integer IDCT, as FFCV's loader uses; false for libjpeg's accurate one (as PIL and
  // OpenCV decode source images).
  bool fast_dct = true;
  // Decode at the smallest DCT scale (n/8 of the full size) whose output is still at least this
  // large; 0 decodes at full size. The returned image has the scaled size.
  int min_width = 0;
  int min_height = 0;
  // With min_width/min_height: consider only the scales 1/2, 1/4 and 1/8 (and full size).
  // libjpeg-turbo runs those inverse DCTs in SIMD; the other n/8 scales run in plain C and were
  // measured slower than a full-size decode of ImageNet-sized photos.
  bool power_of_two_scales = false;
  // Or: decode at the largest DCT scale, at most full size, whose output has no side over
  // max_side and no more than max_pixels pixels (the smallest scale, 1/8, when none fits);
  // 0 is no limit. Used instead of min_width/min_height when either is set.
  int max_side = 0;
  double max_pixels = 0;
  // True: a libjpeg warning fails the decode (the rules above). False: decode through warnings
  // as PIL and OpenCV do (libjpeg fills damaged blocks in), failing only on fatal errors; for
  // reading source photos, never for samples of a dataset.
  bool warnings_are_errors = true;
};

// How encode_jpeg(image, options) encodes; the defaults are the writer's (FFCV's) encoding.
struct JpegEncodeOptions {
  enum class Chroma { k420, k444, kGray };
  int quality = 90;
  Chroma chroma = Chroma::k420;
  bool progressive = false;
};

// Encodes packed RGB pixels. Throws EncodeError on failure. The encoder's worst-case output
// buffer is the thread's own, reused across calls; the returned bytes are a buffer of exactly
// their size, taken from `buffers` when given (byte_buffer_pool.hpp).
std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, int quality,
                                      ByteBufferPool* buffers = nullptr);
// The same with a chosen chroma subsampling and progressive coding. Anything but the defaults
// uses a fresh TurboJPEG handle: a handle keeps state from a progressive call (the next baseline
// call would get optimized Huffman tables), so the bytes would depend on what the thread encoded
// before.
std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, const JpegEncodeOptions& options);

// Reads the frame size without decoding. Throws EncodeError when the data is not a JPEG.
JpegInfo read_jpeg_info(std::span<const std::uint8_t> jpeg);

// Decodes all of `jpeg` with the rules above, checking its frame against `width` x `height`
// when they are positive. Throws EncodeError saying what is wrong.
void validate_jpeg(std::span<const std::uint8_t> jpeg, int width = 0, int height = 0);

// Decodes a whole JPEG into packed RGB, its pixels' storage taken from `buffers` when given.
// Throws EncodeError when it cannot be decoded.
RgbImage decode_jpeg(std::span<const std::uint8_t> jpeg, const JpegDecodeOptions& options = {},
                     ByteBufferPool* buffers = nullptr);

// Decodes a whole JPEG of exactly width x height into `out` (width*height*3 bytes) with the
// fast IDCT, without allocating. Throws EncodeError when it cannot be decoded or its frame size
// differs (FFCV trusts the metadata and overflows its buffer instead).
void decode_jpeg_into(std::span<const std::uint8_t> jpeg, std::uint8_t* out, int width, int height);

}  // namespace ffcv
