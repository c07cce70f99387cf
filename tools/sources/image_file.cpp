#include "image_file.hpp"

#include <fstream>
#include <iterator>
#include <vector>

#include "ffcv/errors.hpp"
#include "ffcv/jpeg_codec.hpp"

#ifdef FFCV_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace ffcv::tools {

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
