#include "ffcv/jpeg_codec.hpp"

#include <turbojpeg.h>

#include <memory>
#include <string>

#include "ffcv/errors.hpp"

namespace ffcv {
namespace {

struct HandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleDeleter>;

// One compressor and one decompressor per thread, created on first use.
tjhandle compressor() {
  thread_local Handle handle(tjInitCompress());
  if (!handle) throw EncodeError("cannot create a TurboJPEG compressor");
  return handle.get();
}

tjhandle decompressor() {
  thread_local Handle handle(tjInitDecompress());
  if (!handle) throw EncodeError("cannot create a TurboJPEG decompressor");
  return handle.get();
}

// TurboJPEG reports recoverable problems (e.g. premature end of data) as warnings; a decode
// that only warned still produced a full image, as libjpeg does for slightly damaged files.
bool failed(tjhandle handle, int status) {
  return status != 0 && tjGetErrorCode(handle) == TJERR_FATAL;
}

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, int quality) {
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != image.byte_size()) {
    throw EncodeError("cannot JPEG-encode an image of " + std::to_string(image.width) + "x" +
                      std::to_string(image.height) + " with " +
                      std::to_string(image.pixels.size()) + " bytes of pixels");
  }
  tjhandle handle = compressor();
  std::vector<std::uint8_t> out(tjBufSize(image.width, image.height, TJSAMP_420));
  unsigned char* buffer = out.data();
  unsigned long size = out.size();
  const int status = tjCompress2(handle, image.pixels.data(), image.width, 0, image.height,
                                 TJPF_RGB, &buffer, &size, TJSAMP_420, quality, TJFLAG_NOREALLOC);
  if (status != 0)
    throw EncodeError(std::string("JPEG encoding failed: ") + tjGetErrorStr2(handle));
  out.resize(size);
  return out;
}

JpegInfo read_jpeg_info(std::span<const std::uint8_t> jpeg) {
  tjhandle handle = decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, jpeg.data(), jpeg.size(), &width, &height, &subsampling,
                          &colorspace) != 0) {
    throw EncodeError(std::string("not a readable JPEG: ") + tjGetErrorStr2(handle));
  }
  if (width <= 0 || height <= 0) throw EncodeError("not a readable JPEG: empty frame size");
  return {width, height, colorspace != TJCS_CMYK && colorspace != TJCS_YCCK};
}

RgbImage decode_jpeg(std::span<const std::uint8_t> jpeg, const JpegDecodeOptions& options) {
  const JpegInfo info = read_jpeg_info(jpeg);
  if (!info.rgb_convertible) throw EncodeError("CMYK JPEGs cannot be decoded to RGB here");
  tjscalingfactor scale{1, 1};
  if (options.min_width > 0 || options.min_height > 0) {
    int count = 0;
    const tjscalingfactor* factors = tjGetScalingFactors(&count);
    for (int k = 0; k < count; ++k) {
      const tjscalingfactor f = factors[k];
      const bool large_enough = TJSCALED(info.width, f) >= options.min_width &&
                                TJSCALED(info.height, f) >= options.min_height;
      if (f.num <= f.denom && large_enough && f.num * scale.denom < scale.num * f.denom) scale = f;
    }
  }
  tjhandle handle = decompressor();
  RgbImage image;
  image.width = TJSCALED(info.width, scale);
  image.height = TJSCALED(info.height, scale);
  image.pixels.resize(image.byte_size());
  const int status =
      tjDecompress2(handle, jpeg.data(), jpeg.size(), image.pixels.data(), image.width, 0,
                    image.height, TJPF_RGB, options.fast_dct ? TJFLAG_FASTDCT : TJFLAG_ACCURATEDCT);
  if (failed(handle, status)) {
    throw EncodeError(std::string("JPEG decoding failed: ") + tjGetErrorStr2(handle));
  }
  return image;
}

}  // namespace ffcv
