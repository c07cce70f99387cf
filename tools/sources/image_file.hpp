// Reading a source image file (JPEG, PNG, BMP, PNM, TIFF or WebP) as a value for an RGBImage
// field.
#pragma once

#include <string>

#include "ffcv/value.hpp"

namespace ffcv::tools {

// JPEG files that libjpeg-turbo can convert to RGB are returned still encoded (JpegFile), so the
// image field can decode them at a reduced scale when it downscales; every other file is
// decoded here to RGB (grayscale and alpha converted). Without OpenCV's imgcodecs only JPEG
// files can be read. The format is told by the file's first bytes, and a file of any other
// format is refused before a decoder sees it: OpenCV would try every codec it was built with
// (DICOM, JPEG 2000, OpenEXR, ...), and some abort the process on a damaged file. Throws
// EncodeError naming the file.
FieldValue read_image_value(const std::string& path);

}  // namespace ffcv::tools
