// Reading a source image file (JPEG, PNG, BMP, WebP, ... whatever OpenCV reads) as a value for
// an RGBImage field.
#pragma once

#include <string>

#include "ffcv/value.hpp"

namespace ffcv::tools {

// JPEG files that libjpeg-turbo can convert to RGB are returned still encoded (JpegFile), so the
// image field can decode them at a reduced scale when it downscales; every other file is
// decoded here to RGB (grayscale and alpha converted). Without OpenCV's imgcodecs only JPEG
// files can be read. Throws EncodeError naming the file.
FieldValue read_image_value(const std::string& path);

}  // namespace ffcv::tools
