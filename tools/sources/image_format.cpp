#include <algorithm>
#include <string_view>

#include "ffcv/util/errors.hpp"
#include "image_decoders.hpp"

namespace ffcv::tools {
namespace {

bool starts_with(std::span<const std::uint8_t> bytes, std::size_t at, std::string_view magic) {
  return bytes.size() >= at + magic.size() &&
         std::equal(magic.begin(), magic.end(), bytes.begin() + at,
                    [](char m, std::uint8_t b) { return static_cast<std::uint8_t>(m) == b; });
}

}  // namespace

ImageFormat sniff_image_format(std::span<const std::uint8_t> bytes) {
  if (starts_with(bytes, 0, "\xff\xd8\xff")) return ImageFormat::kJpeg;
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (starts_with(bytes, 0, "BM")) return ImageFormat::kBmp;
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6') {
    return ImageFormat::kPnm;
  }
  if (starts_with(bytes, 0, std::string_view("II*\0", 4)) ||
      starts_with(bytes, 0, std::string_view("MM\0*", 4))) {
    return ImageFormat::kTiff;
  }
  if (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP")) return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

std::string image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kPnm:
      return "PNM";
    case ImageFormat::kTiff:
      return "TIFF";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

bool can_decode_image_format(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
    case ImageFormat::kBmp:
    case ImageFormat::kPnm:
      return true;
    case ImageFormat::kPng:
#ifdef FFCV_HAVE_LIBPNG
      return true;
#else
      return false;
#endif
    case ImageFormat::kTiff:
#ifdef FFCV_HAVE_LIBTIFF
      return true;
#else
      return false;
#endif
    case ImageFormat::kWebp:
#ifdef FFCV_HAVE_LIBWEBP
      return true;
#else
      return false;
#endif
    case ImageFormat::kUnknown:
      break;
  }
  return false;
}

void check_image_dimensions(std::uint64_t width, std::uint64_t height) {
  if (width == 0 || height == 0) {
    throw EncodeError("its size is " + std::to_string(width) + "x" + std::to_string(height) +
                      " pixels");
  }
  // Divides rather than multiplies: both sides may be as large as the file's fields allow.
  if (width > kMaxSourceImagePixels || height > kMaxSourceImagePixels / width) {
    throw EncodeError("its size " + std::to_string(width) + "x" + std::to_string(height) +
                      " is more than the " + std::to_string(kMaxSourceImagePixels) +
                      " pixels a source image may have");
  }
}

}  // namespace ffcv::tools
