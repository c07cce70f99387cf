// PNG decoding through libpng's simplified API, read as RGBA (so that grayscale, palettes and
// tRNS expand as libpng defines them) and the alpha then dropped.
#include <cstring>
#include <memory>
#include <string>

#include "ffcv/util/errors.hpp"
#include "image_decoders.hpp"

#ifdef FFCV_HAVE_LIBPNG
#include <png.h>
#endif

namespace ffcv::tools {

#ifdef FFCV_HAVE_LIBPNG

namespace {

// Frees libpng's state however decoding ends.
struct PngImageGuard {
  png_image* image;
  ~PngImageGuard() { png_image_free(image); }
};

// The deflate format cannot compress more than 1032 to 1: an IDAT stream of n bytes inflates to
// at most about 1032 n. A header claiming more than the file could hold is refused before the
// output buffer is allocated.
constexpr std::uint64_t kMaxDeflateRatio = 1040;

}  // namespace

RgbImage decode_png(std::span<const std::uint8_t> bytes) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  const PngImageGuard guard{&image};
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    throw EncodeError(std::string("libpng cannot read its header: ") + image.message);
  }
  check_image_dimensions(image.width, image.height);
  // IHDR, which libpng has just read, is the first chunk: bit depth at byte 24, colour type at 25.
  const int channels[7] = {1, 0, 3, 1, 2, 0, 4};
  const std::uint64_t bits_per_pixel = std::uint64_t{bytes[24]} * channels[bytes[25] % 7];
  const std::uint64_t packed_bytes = (std::uint64_t{image.width} * bits_per_pixel + 7) / 8;
  if (packed_bytes * image.height > kMaxDeflateRatio * bytes.size()) {
    throw EncodeError("its PNG header states " + std::to_string(image.width) + "x" +
                      std::to_string(image.height) + " pixels, more than its " +
                      std::to_string(bytes.size()) + " bytes can hold");
  }
  image.format = PNG_FORMAT_RGBA;
  // Without a gAMA or sRGB chunk, 16-bit samples are sRGB-encoded like 8-bit ones (libpng would
  // otherwise take them as linear).
  image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  const std::uint64_t pixels = std::uint64_t{image.width} * image.height;
  // Not value-initialised: pages of a buffer libpng never fills (a truncated file) are never
  // touched.
  std::unique_ptr<std::uint8_t[]> rgba(new std::uint8_t[pixels * 4]);
  if (!png_image_finish_read(&image, nullptr, rgba.get(), 0, nullptr)) {
    throw EncodeError(std::string("libpng cannot decode it: ") + image.message);
  }
  RgbImage out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.pixels.resize(out.byte_size());
  for (std::uint64_t i = 0; i < pixels; ++i) {
    std::memcpy(&out.pixels[3 * i], &rgba[4 * i], 3);
  }
  return out;
}

#else

RgbImage decode_png(std::span<const std::uint8_t>) {
  throw EncodeError("this build cannot read PNG files (it was built without libpng)");
}

#endif

}  // namespace ffcv::tools
