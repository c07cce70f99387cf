// WebP decoding through libwebp: the header's features first (size, animation), then the
// pixels straight into the image's RGB buffer.
#include <memory>
#include <string>

#include "ffcv/util/errors.hpp"
#include "image_decoders.hpp"

#ifdef FFCV_HAVE_LIBWEBP
#include <webp/decode.h>
#endif

namespace ffcv::tools {

#ifdef FFCV_HAVE_LIBWEBP

RgbImage decode_webp(std::span<const std::uint8_t> bytes) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) {
    throw EncodeError("libwebp cannot read its header (status " + std::to_string(status) + ")");
  }
  if (features.has_animation) {
    throw EncodeError("it is an animated WebP (only still images are read)");
  }
  check_image_dimensions(static_cast<std::uint64_t>(features.width),
                         static_cast<std::uint64_t>(features.height));
  RgbImage image;
  image.width = features.width;
  image.height = features.height;
  // Decoded into a buffer that is not value-initialised, so that the pages of a damaged file's
  // claimed size are touched only as far as libwebp gets.
  const std::size_t size = image.byte_size();
  std::unique_ptr<std::uint8_t[]> rgb(new std::uint8_t[size]);
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), rgb.get(), size, image.width * 3) == nullptr) {
    throw EncodeError("libwebp cannot decode it (damaged or truncated data)");
  }
  image.pixels.assign(rgb.get(), rgb.get() + size);
  return image;
}

#else

RgbImage decode_webp(std::span<const std::uint8_t>) {
  throw EncodeError("this build cannot read WebP files (it was built without libwebp)");
}

#endif

}  // namespace ffcv::tools
