#include "image_file.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include "ffcv/errors.hpp"
#include "ffcv/jpeg_codec.hpp"

#ifdef FFCV_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace ffcv::tools {
namespace {

bool starts_with(const std::vector<std::uint8_t>& bytes, std::size_t at, std::string_view magic) {
  return bytes.size() >= at + magic.size() &&
         std::equal(magic.begin(), magic.end(), bytes.begin() + at,
                    [](char m, std::uint8_t b) { return static_cast<std::uint8_t>(m) == b; });
}

// Whether the file's first bytes are those of a format an image folder may hold. OpenCV's
// imdecode would try every decoder it was built with (DICOM, JPEG 2000, OpenEXR, GDAL, ...),
// some of which abort the process on a damaged file: only these formats reach it.
bool is_folder_image_format(const std::vector<std::uint8_t>& bytes) {
  const bool pnm = bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6';
  return starts_with(bytes, 0, "\xff\xd8\xff") ||                           // JPEG
         starts_with(bytes, 0, "\x89PNG\r\n\x1a\n") ||                      // PNG
         starts_with(bytes, 0, "BM") || pnm ||                              // BMP, PNM
         starts_with(bytes, 0, std::string_view("II*\0", 4)) ||             // TIFF, little-endian
         starts_with(bytes, 0, std::string_view("MM\0*", 4)) ||             // TIFF, big-endian
         (starts_with(bytes, 0, "RIFF") && starts_with(bytes, 8, "WEBP"));  // WebP
}

}  // namespace

FieldValue read_image_value(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EncodeError("cannot open image file '" + path + "'");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  try {
    if (read_jpeg_info(bytes).rgb_convertible) return JpegFile{std::move(bytes)};
  } catch (const EncodeError&) {
    // Not a JPEG (or a damaged one): let OpenCV try, and report its verdict.
  }
  if (!is_folder_image_format(bytes)) {
    throw EncodeError("cannot decode image file '" + path + "' (" + std::to_string(bytes.size()) +
                      " bytes): not a JPEG, PNG, BMP, PNM, TIFF or WebP file");
  }
#ifdef FFCV_HAVE_IMGCODECS
  cv::Mat decoded;
  try {
    decoded = cv::imdecode(bytes, cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    decoded = cv::Mat();
  }
  if (decoded.empty()) {
    throw EncodeError("cannot decode image file '" + path + "' (" + std::to_string(bytes.size()) +
                      " bytes; corrupt or unsupported format)");
  }
  RgbImage image;
  image.width = decoded.cols;
  image.height = decoded.rows;
  image.pixels.resize(image.byte_size());
  cv::Mat rgb(image.height, image.width, CV_8UC3, image.pixels.data());
  cv::cvtColor(decoded, rgb, cv::COLOR_BGR2RGB);
  return image;
#else
  throw EncodeError("cannot decode image file '" + path +
                    "' (this build reads RGB or grayscale JPEG sources only)");
#endif
}

}  // namespace ffcv::tools
