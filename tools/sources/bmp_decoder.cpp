// Windows BMP decoding: a 14-byte file header, an info header (12 bytes for OS/2's core header,
// 40 to 124 for Windows' versions), bit-field masks, a palette, then rows padded to 4 bytes,
// bottom row first unless the height is negative. Every size and offset is checked against the
// file before it is used.
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "image_decoders.hpp"

namespace ffcv::tools {
namespace {

constexpr std::uint32_t kRgb = 0, kRle8 = 1, kRle4 = 2, kBitFields = 3, kJpeg = 4, kPng = 5,
                        kAlphaBitFields = 6;

// BMP stores its numbers little-endian; `at` is within `b`, as the callers check.
std::uint32_t u16_at(std::span<const std::uint8_t> b, std::size_t at) {
  return load_le<std::uint16_t>(b.data() + at);
}

std::uint32_t u32_at(std::span<const std::uint8_t> b, std::size_t at) {
  return load_le<std::uint32_t>(b.data() + at);
}

// One colour channel of a bit-field pixel: its mask, and the mask's position and width.
struct Channel {
  std::uint32_t mask = 0;
  int shift = 0;
  std::uint64_t max = 0;

  std::uint8_t of(std::uint32_t pixel) const {
    return static_cast<std::uint8_t>((((pixel & mask) >> shift) * 255 + max / 2) / max);
  }
};

Channel channel_of(std::uint32_t mask, const char* name, int bits_per_pixel) {
  if (mask == 0) throw EncodeError(std::string("its BMP ") + name + " bit mask is 0");
  if (bits_per_pixel < 32 && (mask >> bits_per_pixel) != 0) {
    throw EncodeError(std::string("its BMP ") + name + " bit mask has bits beyond its " +
                      std::to_string(bits_per_pixel) + "-bit pixels");
  }
  Channel channel;
  channel.mask = mask;
  channel.shift = std::countr_zero(mask);
  const std::uint32_t bits = mask >> channel.shift;
  if ((bits & (bits + 1)) != 0) {
    throw EncodeError(std::string("its BMP ") + name + " bit mask is not one run of bits");
  }
  channel.max = bits;
  return channel;
}

// What the file header and the info header say.
struct BmpHeader {
  std::uint64_t data_offset = 0;  // of the pixel rows, from the start of the file
  std::uint32_t header_size = 0;  // of the info header
  bool core = false;              // OS/2's 12-byte info header: 16-bit sizes, 3-byte palette
  std::int64_t width = 0;
  std::int64_t height = 0;  // made positive; top_down says whether the file's was negative
  bool top_down = false;
  std::uint32_t bits_per_pixel = 0;
  std::uint32_t compression = kRgb;
  std::uint32_t colors_used = 0;  // palette entries; 0 for all that the pixel size allows

  bool bit_fields() const { return compression == kBitFields || compression == kAlphaBitFields; }
  bool paletted() const {
    return bits_per_pixel == 1 || bits_per_pixel == 4 || bits_per_pixel == 8;
  }
};

// The file header and the info header's fields; refuses a file too short for them and an info
// header of a size that is not read.
BmpHeader read_bmp_header(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 18 || bytes[0] != 'B' || bytes[1] != 'M') {
    throw EncodeError("it is too short for a BMP header");
  }
  BmpHeader header;
  header.data_offset = u32_at(bytes, 10);
  header.header_size = u32_at(bytes, 14);
  header.core = header.header_size == 12;
  const std::uint32_t size = header.header_size;
  if (!header.core && size != 40 && size != 52 && size != 56 && size != 108 && size != 124) {
    throw EncodeError("its BMP info header has " + std::to_string(size) +
                      " bytes (12, 40, 52, 56, 108 or 124 are read)");
  }
  if (bytes.size() < 14 + std::uint64_t{size}) {
    throw EncodeError("it ends inside its BMP info header");
  }
  if (header.core) {
    header.width = u16_at(bytes, 18);
    header.height = u16_at(bytes, 20);
    header.bits_per_pixel = u16_at(bytes, 24);
  } else {
    header.width = static_cast<std::int32_t>(u32_at(bytes, 18));
    header.height = static_cast<std::int32_t>(u32_at(bytes, 22));
    header.bits_per_pixel = u16_at(bytes, 28);
    header.compression = u32_at(bytes, 30);
    header.colors_used = u32_at(bytes, 46);
  }
  header.top_down = header.height < 0;
  if (header.top_down) header.height = -header.height;  // an int64: -INT32_MIN fits
  return header;
}

void check_bmp_dimensions(const BmpHeader& header) {
  if (header.width <= 0) throw EncodeError("its BMP width is " + std::to_string(header.width));
  check_image_dimensions(static_cast<std::uint64_t>(header.width),
                         static_cast<std::uint64_t>(header.height));
}

// Refuses compressed pixels and pixel sizes that are not read.
void check_bmp_pixel_format(const BmpHeader& header) {
  const std::uint32_t compression = header.compression;
  if (compression == kRle8 || compression == kRle4) {
    throw EncodeError("it is an RLE-compressed BMP (only uncompressed BMP files are read)");
  }
  if (compression == kJpeg || compression == kPng) {
    throw EncodeError(
        "it is a BMP holding JPEG or PNG data (only uncompressed BMP files are read)");
  }
  if (compression != kRgb && !header.bit_fields()) {
    throw EncodeError("its BMP compression type is " + std::to_string(compression));
  }
  const std::uint32_t bits = header.bits_per_pixel;
  if (header.bit_fields() ? (bits != 16 && bits != 32)
                          : (!header.paletted() && bits != 16 && bits != 24 && bits != 32)) {
    throw EncodeError("it is a BMP of " + std::to_string(bits) +
                      " bits per pixel (1, 4, 8, 16, 24 or 32 are read)");
  }
}

// The red, green and blue channels of 16-bit pixels (5 bits each unless the file gives masks) and
// of 32-bit pixels with bit-field masks: after a 40-byte header, or inside the later headers.
// Unused (left zero) for other pixels.
std::array<Channel, 3> read_bit_fields(std::span<const std::uint8_t> bytes,
                                       const BmpHeader& header) {
  std::uint32_t masks[3] = {0, 0, 0};
  if (header.bit_fields()) {
    if (bytes.size() < 14 + 40 + 12) throw EncodeError("it ends inside its BMP bit masks");
    for (int c = 0; c < 3; ++c) masks[c] = u32_at(bytes, 54 + 4 * c);
  } else if (header.bits_per_pixel == 16) {
    masks[0] = 0x7c00, masks[1] = 0x03e0, masks[2] = 0x001f;
  }
  std::array<Channel, 3> channels;
  if (header.bits_per_pixel == 16 || header.bit_fields()) {
    const char* names[3] = {"red", "green", "blue"};
    for (int c = 0; c < 3; ++c) {
      channels[c] = channel_of(masks[c], names[c], static_cast<int>(header.bits_per_pixel));
    }
  }
  return channels;
}

// The palette of 1-, 4- and 8-bit pixels as RGB triples (after the info header and the bit masks
// that a 40-byte header with bit fields is followed by); empty for other pixels.
std::vector<std::uint8_t> read_palette(std::span<const std::uint8_t> bytes,
                                       const BmpHeader& header) {
  std::uint64_t palette_at = 14 + std::uint64_t{header.header_size};
  if (header.bit_fields() && header.header_size == 40) {
    palette_at += header.compression == kAlphaBitFields ? 16 : 12;
  }
  std::vector<std::uint8_t> palette;
  if (!header.paletted()) return palette;
  const std::uint64_t full = std::uint64_t{1} << header.bits_per_pixel;
  const std::uint64_t colors_used = header.colors_used;
  const std::uint64_t count = colors_used == 0 || colors_used > full ? full : colors_used;
  const std::uint64_t entry = header.core ? 3 : 4;
  if (palette_at + count * entry > bytes.size()) {
    throw EncodeError("it ends inside its BMP palette of " + std::to_string(count) + " colours");
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* bgr = bytes.data() + palette_at + i * entry;
    palette.insert(palette.end(), {bgr[2], bgr[1], bgr[0]});
  }
  return palette;
}

void check_pixel_data_in_file(std::span<const std::uint8_t> bytes, std::uint64_t data_offset,
                              std::uint64_t stride, std::uint64_t height) {
  if (data_offset > bytes.size() || stride * height > bytes.size() - data_offset) {
    throw EncodeError("its BMP pixel data (" + std::to_string(stride * height) +
                      " bytes at offset " + std::to_string(data_offset) +
                      ") runs past the end of the file (" + std::to_string(bytes.size()) +
                      " bytes)");
  }
}

// Output row y of 1-, 4- or 8-bit pixels: indices into the palette, packed from the most
// significant bit of each byte.
void decode_paletted_row(const std::uint8_t* row, std::uint64_t y, std::uint64_t width,
                         std::uint32_t bits_per_pixel, const std::vector<std::uint8_t>& palette,
                         std::uint8_t* out) {
  const std::uint64_t palette_size = palette.size() / 3;
  for (std::uint64_t x = 0; x < width; ++x, out += 3) {
    const int per_byte = 8 / static_cast<int>(bits_per_pixel);
    const int shift = 8 - static_cast<int>(bits_per_pixel) * (1 + static_cast<int>(x % per_byte));
    const std::uint64_t index = (row[x / per_byte] >> shift) & ((1u << bits_per_pixel) - 1);
    if (index >= palette_size) {
      throw EncodeError("its BMP pixel (" + std::to_string(x) + ", " + std::to_string(y) +
                        ") uses colour " + std::to_string(index) + " of a palette of " +
                        std::to_string(palette_size));
    }
    out[0] = palette[3 * index];
    out[1] = palette[3 * index + 1];
    out[2] = palette[3 * index + 2];
  }
}

// A row of 24-bit pixels, or of 32-bit ones without bit fields: blue, green, red (and a byte
// that is not read).
void decode_bgr_row(const std::uint8_t* row, std::uint64_t width, std::uint32_t bits_per_pixel,
                    std::uint8_t* out) {
  for (std::uint64_t x = 0; x < width; ++x, out += 3) {
    const std::uint8_t* bgr = row + x * (bits_per_pixel / 8);
    out[0] = bgr[2];
    out[1] = bgr[1];
    out[2] = bgr[0];
  }
}

// A row of 16-bit pixels, or of 32-bit ones with bit fields.
void decode_bit_field_row(std::span<const std::uint8_t> row, std::uint64_t width,
                          std::uint32_t bits_per_pixel, const std::array<Channel, 3>& channels,
                          std::uint8_t* out) {
  for (std::uint64_t x = 0; x < width; ++x, out += 3) {
    const std::uint32_t pixel = bits_per_pixel == 16 ? u16_at(row, 2 * x) : u32_at(row, 4 * x);
    for (int c = 0; c < 3; ++c) out[c] = channels[c].of(pixel);
  }
}

}  // namespace

RgbImage decode_bmp(std::span<const std::uint8_t> bytes) {
  const BmpHeader header = read_bmp_header(bytes);
  check_bmp_dimensions(header);
  check_bmp_pixel_format(header);
  const std::array<Channel, 3> channels = read_bit_fields(bytes, header);
  const std::vector<std::uint8_t> palette = read_palette(bytes, header);

  const std::uint64_t w = static_cast<std::uint64_t>(header.width);
  const std::uint64_t h = static_cast<std::uint64_t>(header.height);
  const std::uint32_t bits_per_pixel = header.bits_per_pixel;
  const std::uint64_t stride = (w * bits_per_pixel + 31) / 32 * 4;  // rows padded to 4 bytes
  check_pixel_data_in_file(bytes, header.data_offset, stride, h);

  RgbImage image;
  image.width = static_cast<int>(w);
  image.height = static_cast<int>(h);
  image.pixels.resize(image.byte_size());
  const bool bgr = bits_per_pixel == 24 || (bits_per_pixel == 32 && !header.bit_fields());
  for (std::uint64_t y = 0; y < h; ++y) {
    const std::uint8_t* row =
        bytes.data() + header.data_offset + (header.top_down ? y : h - 1 - y) * stride;
    std::uint8_t* out = image.pixels.data() + y * w * 3;
    if (header.paletted()) {
      decode_paletted_row(row, y, w, bits_per_pixel, palette, out);
    } else if (bgr) {
      decode_bgr_row(row, w, bits_per_pixel, out);
    } else {
      decode_bit_field_row({row, stride}, w, bits_per_pixel, channels, out);
    }
  }
  return image;
}

}  // namespace ffcv::tools
