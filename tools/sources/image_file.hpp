// Reading a source image file (JPEG, PNG, BMP, PNM, TIFF or WebP) as a value for an RGBImage
// field.
#pragma once

#include <string>

#include "ffcv/format/value.hpp"

namespace ffcv::tools {

// The format is told by the file's first bytes and the file goes to that format's decoder and
// no other (image_decoders.hpp): a file of any other format is refused before a decoder sees it.
// JPEG files that libjpeg-turbo can convert to RGB are returned still encoded (JpegFile), so the
// image field can decode them at a reduced scale when it downscales; CMYK/YCCK JPEGs and every
// other format are decoded here to RGB (grayscale repeated, alpha dropped). A format this build
// has no decoder for (PNG, TIFF or WebP without its library) is refused naming the library.
// Throws EncodeError naming the file.
FieldValue read_image_value(const std::string& path);

}  // namespace ffcv::tools
