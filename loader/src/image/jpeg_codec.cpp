#include "ffcv/image/jpeg_codec.hpp"

#include <turbojpeg.h>

#include <algorithm>
#include <memory>
#include <string>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

struct HandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleDeleter>;

// One compressor and one decompressor per thread, created on first use. A handle that reported
// an error is discarded: TurboJPEG 2.1 can leave it in a state where the next, valid file fails
// ("Bogus marker length").
thread_local Handle tls_compressor;
thread_local Handle tls_decompressor;

tjhandle compressor() {
  if (!tls_compressor) tls_compressor.reset(tjInitCompress());
  if (!tls_compressor) throw EncodeError("cannot create a TurboJPEG compressor");
  return tls_compressor.get();
}

tjhandle decompressor() {
  if (!tls_decompressor) tls_decompressor.reset(tjInitDecompress());
  if (!tls_decompressor) throw EncodeError("cannot create a TurboJPEG decompressor");
  return tls_decompressor.get();
}

// Throws `what` plus the handle's error text, discarding the handle.
[[noreturn]] void fail(Handle& handle, const std::string& what) {
  const std::string message = what + tjGetErrorStr2(handle.get());
  handle.reset();
  throw EncodeError(message);
}

// Decodes are run with TJFLAG_STOPONWARNING: libjpeg's warnings (corrupt data, premature end,
// extraneous bytes) are errors, as jpeg_codec.hpp defines a bad JPEG.
bool failed(int status) { return status != 0; }

void check_encodable(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != image.byte_size()) {
    throw EncodeError("cannot JPEG-encode an image of " + std::to_string(image.width) + "x" +
                      std::to_string(image.height) + " with " +
                      std::to_string(image.pixels.size()) + " bytes of pixels");
  }
}

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, int quality, ByteBufferPool* buffers) {
  check_encodable(image);
  tjhandle handle = compressor();
  // The worst case of an image is several times its usual output: written into a buffer that
  // stays with the thread (so it is neither zero-filled nor faulted in again per image), unless
  // it is larger than images usually are; the output is then copied out at its size.
  constexpr std::size_t kKeptScratchBytes = std::size_t{16} << 20;
  thread_local std::vector<std::uint8_t> tls_scratch;
  std::vector<std::uint8_t> one_off;
  const std::size_t worst = tjBufSize(image.width, image.height, TJSAMP_420);
  std::vector<std::uint8_t>& scratch = worst <= kKeptScratchBytes ? tls_scratch : one_off;
  if (scratch.size() < worst) scratch.resize(worst);
  unsigned char* buffer = scratch.data();
  unsigned long size = scratch.size();
  const int status =
      tjCompress2(handle, image.pixels.data(), image.width, 0, image.height, TJPF_RGB, &buffer,
                  &size, TJSAMP_420, quality, TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT);
  if (status != 0) fail(tls_compressor, "JPEG encoding failed: ");
  std::vector<std::uint8_t> out = take_buffer(buffers, size);
  std::copy(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(size), out.begin());
  return out;
}

std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, const JpegEncodeOptions& options) {
  using Chroma = JpegEncodeOptions::Chroma;
  if (options.chroma == Chroma::k420 && !options.progressive) {
    return encode_jpeg(image, options.quality);
  }
  check_encodable(image);
  const int subsampling = options.chroma == Chroma::k444    ? TJSAMP_444
                          : options.chroma == Chroma::kGray ? TJSAMP_GRAY
                                                            : TJSAMP_420;
  Handle handle(tjInitCompress());
  if (!handle) throw EncodeError("cannot create a TurboJPEG compressor");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int status =
      tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height, TJPF_RGB,
                  &buffer, &size, subsampling, options.quality,
                  TJFLAG_ACCURATEDCT | (options.progressive ? TJFLAG_PROGRESSIVE : 0));
  const std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(buffer, tjFree);
  if (status != 0) fail(handle, "JPEG encoding failed: ");
  return std::vector<std::uint8_t>(buffer, buffer + size);
}

JpegInfo read_jpeg_info(std::span<const std::uint8_t> jpeg) {
  tjhandle handle = decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, jpeg.data(), jpeg.size(), &width, &height, &subsampling,
                          &colorspace) != 0) {
    fail(tls_decompressor, "not a readable JPEG: ");
  }
  if (width <= 0 || height <= 0) throw EncodeError("not a readable JPEG: empty frame size");
  return {width, height, colorspace != TJCS_CMYK && colorspace != TJCS_YCCK};
}

namespace {

// The DCT scale JpegDecodeOptions asks for (jpeg_codec.hpp).
tjscalingfactor decode_scale(const JpegInfo& info, const JpegDecodeOptions& options) {
  const bool bounded = options.max_side > 0 || options.max_pixels > 0;
  if (!bounded && options.min_width <= 0 && options.min_height <= 0) return {1, 1};
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  tjscalingfactor chosen = bounded ? tjscalingfactor{1, 8} : tjscalingfactor{1, 1};
  double chosen_value = bounded ? 0.0 : 1.0;
  for (int k = 0; k < count; ++k) {
    const tjscalingfactor f = factors[k];
    const double value = static_cast<double>(f.num) / f.denom;
    const int width = TJSCALED(info.width, f), height = TJSCALED(info.height, f);
    if (value > 1.0) continue;
    const bool power_of_two = value == 1.0 || value == 0.5 || value == 0.25 || value == 0.125;
    if (!bounded && options.power_of_two_scales && !power_of_two) continue;
    if (bounded) {
      const bool fits = (options.max_side <= 0 || std::max(width, height) <= options.max_side) &&
                        (options.max_pixels <= 0 || double(width) * height <= options.max_pixels);
      if (fits && value > chosen_value) chosen = f, chosen_value = value;
    } else {
      const bool large_enough = width >= options.min_width && height >= options.min_height;
      if (large_enough && value < chosen_value) chosen = f, chosen_value = value;
    }
  }
  return chosen;
}

}  // namespace

RgbImage decode_jpeg(std::span<const std::uint8_t> jpeg, const JpegDecodeOptions& options,
                     ByteBufferPool* buffers) {
  const JpegInfo info = read_jpeg_info(jpeg);
  if (!info.rgb_convertible) throw EncodeError("CMYK JPEGs cannot be decoded to RGB here");
  const tjscalingfactor scale = decode_scale(info, options);
  tjhandle handle = decompressor();
  RgbImage image;
  image.width = TJSCALED(info.width, scale);
  image.height = TJSCALED(info.height, scale);
  image.pixels = take_buffer(buffers, image.byte_size());
  const int status = tjDecompress2(handle, jpeg.data(), jpeg.size(), image.pixels.data(),
                                   image.width, 0, image.height, TJPF_RGB,
                                   (options.fast_dct ? TJFLAG_FASTDCT : TJFLAG_ACCURATEDCT) |
                                       (options.warnings_are_errors ? TJFLAG_STOPONWARNING : 0));
  if (failed(status)) {
    const bool fatal = options.warnings_are_errors || tjGetErrorCode(handle) == TJERR_FATAL;
    if (fatal) fail(tls_decompressor, "JPEG decoding failed: ");
    tls_decompressor.reset();  // decoded through a warning: the handle is discarded all the same
  }
  return image;
}

void decode_jpeg_into(std::span<const std::uint8_t> jpeg, std::uint8_t* out, int width,
                      int height) {
  const JpegInfo info = read_jpeg_info(jpeg);
  if (info.width != width || info.height != height) {
    throw EncodeError("JPEG of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                      " does not match its metadata size " + std::to_string(width) + "x" +
                      std::to_string(height));
  }
  if (!info.rgb_convertible) throw EncodeError("CMYK JPEGs cannot be decoded to RGB here");
  tjhandle handle = decompressor();
  const int status = tjDecompress2(handle, jpeg.data(), jpeg.size(), out, width, 0, height,
                                   TJPF_RGB, TJFLAG_FASTDCT | TJFLAG_STOPONWARNING);
  if (failed(status)) fail(tls_decompressor, "JPEG decoding failed: ");
}

void validate_jpeg(std::span<const std::uint8_t> jpeg, int width, int height) {
  const JpegInfo info = read_jpeg_info(jpeg);
  if (width > 0 && height > 0 && (info.width != width || info.height != height)) {
    throw EncodeError("JPEG of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                      " does not match its metadata size " + std::to_string(width) + "x" +
                      std::to_string(height));
  }
  // At 1/8 scale: every byte is entropy-decoded (where warnings arise) at a fraction of the cost.
  decode_jpeg(jpeg, {.fast_dct = true, .min_width = 1, .min_height = 1});
}

}  // namespace ffcv
