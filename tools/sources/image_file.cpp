#include "image_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>
#include <vector>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/whole_file.hpp"
#include "image_decoders.hpp"

namespace ffcv::tools {
namespace {

RgbImage decode_as(ImageFormat format, std::span<const std::uint8_t> bytes) {
  switch (format) {
    case ImageFormat::kJpeg:
      return decode_cmyk_jpeg(bytes);
    case ImageFormat::kPng:
      return decode_png(bytes);
    case ImageFormat::kBmp:
      return decode_bmp(bytes);
    case ImageFormat::kPnm:
      return decode_pnm(bytes);
    case ImageFormat::kTiff:
      return decode_tiff(bytes);
    case ImageFormat::kWebp:
      return decode_webp(bytes);
    case ImageFormat::kUnknown:
      break;
  }
  throw EncodeError("not a JPEG, PNG, BMP, PNM, TIFF or WebP file");
}

}  // namespace

std::string lowercase_extension(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return extension;
}

bool has_image_extension(const std::string& path) {
  static const std::set<std::string> kExtensions = {
      ".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".pbm", ".pnm", ".tif", ".tiff", ".webp"};
  return kExtensions.count(lowercase_extension(path)) != 0;
}

bool hidden_path(const std::string& relative_path) {
  std::size_t start = 0;
  while (start < relative_path.size()) {
    std::size_t end = relative_path.find('/', start);
    if (end == std::string::npos) end = relative_path.size();
    const std::string_view part(relative_path.data() + start, end - start);
    if (part.starts_with('.') && part != "." && part != "..") return true;
    start = end + 1;
  }
  return false;
}

FieldValue image_value(std::vector<std::uint8_t> bytes, const std::string& name) {
  const ImageFormat format = sniff_image_format(bytes);
  const std::string what = std::to_string(bytes.size()) + " bytes";
  if (format == ImageFormat::kUnknown) {
    throw EncodeError("cannot decode image file '" + name + "' (" + what +
                      "): not a JPEG, PNG, BMP, PNM, TIFF or WebP file");
  }
  try {
    // RGB and grayscale JPEGs stay encoded; the image field decodes (and checks) them.
    if (format == ImageFormat::kJpeg && read_jpeg_info(bytes).rgb_convertible) {
      return JpegFile{std::move(bytes)};
    }
    return decode_as(format, bytes);
  } catch (const EncodeError& error) {
    throw EncodeError("cannot decode image file '" + name + "' (" + what + ", " +
                      image_format_name(format) + "): " + error.what());
  }
}

void start_reading(const std::string& path) {
  // O_NONBLOCK: a FIFO must not block the hint (the read refuses it by name).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
  ::close(fd);
}

FieldValue read_image_value(const std::string& path) {
  std::vector<std::uint8_t> bytes;
  try {
    bytes = read_whole_file(path);
  } catch (const IoError& error) {
    // A file gone or unreadable since the folder was listed is a bad image (--on-bad-image).
    throw EncodeError(std::string("cannot read image file: ") + error.what());
  }
  return image_value(std::move(bytes), path);
}

}  // namespace ffcv::tools
