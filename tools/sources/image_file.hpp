// Reading a source image file (JPEG, PNG, BMP, WebP, ... whatever OpenCV reads) as RGB.
#pragma once

#include <string>

#include "ffcv/value.hpp"

namespace ffcv::tools {

// Reads `path` as an 8-bit RGB image (grayscale and alpha images are converted). Without
// OpenCV's imgcodecs only JPEG files can be read. Throws EncodeError naming the file.
RgbImage read_image_file(const std::string& path);

}  // namespace ffcv::tools
