// Reading a source image file (JPEG, PNG, BMP, PNM, TIFF or WebP) as a value for an RGBImage
// field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// Asks the kernel to start reading `path` into the page cache (posix_fadvise WILLNEED), for a
// source's prefetch(); a file that cannot be opened is left for the read to report.
void start_reading(const std::string& path);

// The file name's last extension, lower-cased (".jpg" of "a/B.JPG"; "" without one).
std::string lowercase_extension(const std::string& path);

// Whether the file name ends in an image extension the sources read (.jpg, .jpeg, .png, .bmp,
// .ppm, .pgm, .pbm, .pnm, .tif, .tiff, .webp; any case).
bool has_image_extension(const std::string& path);

// Whether a source leaves the file at `relative_path` out unseen: any of its folders or its name
// begins with "." (".DS_Store", macOS's "._x.jpg", ".git/", ".hidden/x.jpg"; a leading "./" is
// no folder). One rule for a folder write and for an archive's members, so that a tar gives the
// file its extracted folder gives.
bool hidden_path(const std::string& relative_path);

// The same for an image's bytes already in memory (an archive's member); `name` is what errors
// call it.
FieldValue image_value(std::vector<std::uint8_t> bytes, const std::string& name);

}  // namespace ffcv::tools
