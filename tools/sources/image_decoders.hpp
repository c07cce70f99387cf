// The decoders of source images, one per format, each reading only its own format.
//
// A source image's format is told from its first bytes (sniff_image_format) and the bytes go to
// that format's decoder and no other: a general-purpose "decode anything" call (OpenCV's
// imdecode) picks a decoder by signatures of its own, anywhere in the file, and some of those
// decoders (DICOM, for one) abort the process on a damaged file. PNM and BMP are parsed here;
// PNG, TIFF and WebP go to libpng, libtiff and libwebp, each a part of the build that is left out
// when its library is missing (can_decode_image_format says which are in); CMYK and YCCK JPEGs
// go to libjpeg. Every decoder returns packed RGB8: grayscale is repeated into the three
// channels, an alpha channel is dropped (the colour values are kept as the file stores them),
// samples of more than 8 bits are scaled to 8. Every malformed input throws EncodeError saying
// what is wrong (without the file's name, which the caller adds).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ffcv/format/value.hpp"

namespace ffcv::tools {

enum class ImageFormat { kUnknown, kJpeg, kPng, kBmp, kPnm, kTiff, kWebp };

// The format whose signature the bytes start with: JPEG (FF D8 FF), PNG, BMP ("BM"), PNM ("P1"
// to "P6"), TIFF ("II*\0" or "MM\0*") or WebP ("RIFF....WEBP"); kUnknown for anything else.
ImageFormat sniff_image_format(std::span<const std::uint8_t> bytes);

// "JPEG", "PNG", ...
std::string image_format_name(ImageFormat format);

// Whether this build holds the decoder of `format` (PNG, TIFF and WebP need their libraries).
bool can_decode_image_format(ImageFormat format);

// The largest image a decoder accepts, in pixels (16384 x 16384): the output buffer is sized from
// the file's header before its data is read, and a few damaged bytes must not ask for gigabytes.
inline constexpr std::uint64_t kMaxSourceImagePixels = std::uint64_t{1} << 28;

// Throws EncodeError unless width and height are positive and their product is at most
// kMaxSourceImagePixels.
void check_image_dimensions(std::uint64_t width, std::uint64_t height);

// Netpbm: P1 to P6 (plain and raw bitmaps, graymaps and pixmaps), maxval up to 65535.
RgbImage decode_pnm(std::span<const std::uint8_t> bytes);
// Windows BMP: uncompressed 1, 4, 8, 16, 24 and 32 bits per pixel (16 and 32 also with bit-field
// masks), bottom-up and top-down, with any of the usual header versions; RLE and embedded
// JPEG/PNG data are refused.
RgbImage decode_bmp(std::span<const std::uint8_t> bytes);
// PNG through libpng's simplified API (every bit depth and colour type; 16-bit samples are read
// as sRGB-encoded when the file states no gamma).
RgbImage decode_png(std::span<const std::uint8_t> bytes);
// TIFF through libtiff's RGBA interface (any photometric interpretation and compression libtiff
// reads), first directory only.
RgbImage decode_tiff(std::span<const std::uint8_t> bytes);
// WebP (lossy or lossless) through libwebp.
RgbImage decode_webp(std::span<const std::uint8_t> bytes);
// A CMYK or YCCK JPEG through libjpeg, converted as Adobe's inverted CMYK (as Photoshop writes it
// and OpenCV reads it): R = C * K / 255 and likewise for G and B. A libjpeg warning (corrupt or
// missing data) is an error, as for every JPEG the writer reads.
RgbImage decode_cmyk_jpeg(std::span<const std::uint8_t> bytes);

}  // namespace ffcv::tools
