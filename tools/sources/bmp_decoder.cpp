// Windows BMP decoding: a 14-byte file header, an info header (12 bytes for OS/2's core header,
// 40 to 124 for Windows' versions), bit-field masks, a palette, then rows padded to 4 bytes,
// bottom row first unless the height is negative. Every size and offset is checked against the
// file before it is used.
#include <bit>
#include <cstdint>
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

// One colour channel of a bit-field pixel: its mask's position and width.
struct Channel {
  int shift = 0;
  std::uint64_t max = 0;

  std::uint8_t of(std::uint32_t pixel, std::uint32_t mask) const {
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
  channel.shift = std::countr_zero(mask);
  const std::uint32_t bits = mask >> channel.shift;
  if ((bits & (bits + 1)) != 0) {
    throw EncodeError(std::string("its BMP ") + name + " bit mask is not one run of bits");
  }
  channel.max = bits;
  return channel;
}

}  // namespace

RgbImage decode_bmp(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 18 || bytes[0] != 'B' || bytes[1] != 'M') {
    throw EncodeError("it is too short for a BMP header");
  }
  const std::uint64_t data_offset = u32_at(bytes, 10);
  const std::uint32_t header_size = u32_at(bytes, 14);
  const bool core = header_size == 12;
  if (!core && header_size != 40 && header_size != 52 && header_size != 56 && header_size != 108 &&
      header_size != 124) {
    throw EncodeError("its BMP info header has " + std::to_string(header_size) +
                      " bytes (12, 40, 52, 56, 108 or 124 are read)");
  }
  if (bytes.size() < 14 + std::uint64_t{header_size}) {
    throw EncodeError("it ends inside its BMP info header");
  }
  std::int64_t width = 0, height = 0;
  std::uint32_t bits_per_pixel = 0, compression = kRgb, colors_used = 0;
  if (core) {
    width = u16_at(bytes, 18);
    height = u16_at(bytes, 20);
    bits_per_pixel = u16_at(bytes, 24);
  } else {
    width = static_cast<std::int32_t>(u32_at(bytes, 18));
    height = static_cast<std::int32_t>(u32_at(bytes, 22));
    bits_per_pixel = u16_at(bytes, 28);
    compression = u32_at(bytes, 30);
    colors_used = u32_at(bytes, 46);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;  // an int64: -INT32_MIN fits
  if (width <= 0) throw EncodeError("its BMP width is " + std::to_string(width));
  check_image_dimensions(static_cast<std::uint64_t>(width), static_cast<std::uint64_t>(height));

  if (compression == kRle8 || compression == kRle4) {
    throw EncodeError("it is an RLE-compressed BMP (only uncompressed BMP files are read)");
  }
  if (compression == kJpeg || compression == kPng) {
    throw EncodeError(
        "it is a BMP holding JPEG or PNG data (only uncompressed BMP files are read)");
  }
  const bool bit_fields = compression == kBitFields || compression == kAlphaBitFields;
  if (compression != kRgb && !bit_fields) {
    throw EncodeError("its BMP compression type is " + std::to_string(compression));
  }
  const bool paletted = bits_per_pixel == 1 || bits_per_pixel == 4 || bits_per_pixel == 8;
  if (bit_fields
          ? (bits_per_pixel != 16 && bits_per_pixel != 32)
          : (!paletted && bits_per_pixel != 16 && bits_per_pixel != 24 && bits_per_pixel != 32)) {
    throw EncodeError("it is a BMP of " + std::to_string(bits_per_pixel) +
                      " bits per pixel (1, 4, 8, 16, 24 or 32 are read)");
  }

  // Bit-field masks: after a 40-byte header (3 or 4 of them), or inside the later headers.
  std::uint32_t masks[3] = {0, 0, 0};
  std::uint64_t palette_at = 14 + std::uint64_t{header_size};
  if (bit_fields) {
    if (header_size == 40) palette_at += compression == kAlphaBitFields ? 16 : 12;
    if (bytes.size() < 14 + 40 + 12) throw EncodeError("it ends inside its BMP bit masks");
    for (int c = 0; c < 3; ++c) masks[c] = u32_at(bytes, 54 + 4 * c);
  } else if (bits_per_pixel == 16) {
    masks[0] = 0x7c00, masks[1] = 0x03e0, masks[2] = 0x001f;
  }
  Channel channels[3];
  if (bits_per_pixel == 16 || bit_fields) {
    const char* names[3] = {"red", "green", "blue"};
    for (int c = 0; c < 3; ++c) {
      channels[c] = channel_of(masks[c], names[c], static_cast<int>(bits_per_pixel));
    }
  }

  // The palette, as RGB triples.
  std::vector<std::uint8_t> palette;
  if (paletted) {
    const std::uint64_t full = std::uint64_t{1} << bits_per_pixel;
    const std::uint64_t count = colors_used == 0 || colors_used > full ? full : colors_used;
    const std::uint64_t entry = core ? 3 : 4;
    if (palette_at + count * entry > bytes.size()) {
      throw EncodeError("it ends inside its BMP palette of " + std::to_string(count) + " colours");
    }
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint8_t* bgr = bytes.data() + palette_at + i * entry;
      palette.insert(palette.end(), {bgr[2], bgr[1], bgr[0]});
    }
  }

  const std::uint64_t w = static_cast<std::uint64_t>(width);
  const std::uint64_t h = static_cast<std::uint64_t>(height);
  const std::uint64_t stride = (w * bits_per_pixel + 31) / 32 * 4;
  if (data_offset > bytes.size() || stride * h > bytes.size() - data_offset) {
    throw EncodeError("its BMP pixel data (" + std::to_string(stride * h) + " bytes at offset " +
                      std::to_string(data_offset) + ") runs past the end of the file (" +
                      std::to_string(bytes.size()) + " bytes)");
  }

  RgbImage image;
  image.width = static_cast<int>(w);
  image.height = static_cast<int>(h);
  image.pixels.resize(image.byte_size());
  const std::uint64_t palette_size = palette.size() / 3;
  for (std::uint64_t y = 0; y < h; ++y) {
    const std::uint8_t* row = bytes.data() + data_offset + (top_down ? y : h - 1 - y) * stride;
    std::uint8_t* out = image.pixels.data() + y * w * 3;
    for (std::uint64_t x = 0; x < w; ++x, out += 3) {
      if (paletted) {
        const int per_byte = 8 / static_cast<int>(bits_per_pixel);
        const int shift =
            8 - static_cast<int>(bits_per_pixel) * (1 + static_cast<int>(x % per_byte));
        const std::uint64_t index = (row[x / per_byte] >> shift) & ((1u << bits_per_pixel) - 1);
        if (index >= palette_size) {
          throw EncodeError("its BMP pixel (" + std::to_string(x) + ", " + std::to_string(y) +
                            ") uses colour " + std::to_string(index) + " of a palette of " +
                            std::to_string(palette_size));
        }
        out[0] = palette[3 * index];
        out[1] = palette[3 * index + 1];
        out[2] = palette[3 * index + 2];
      } else if (bits_per_pixel == 24 || (bits_per_pixel == 32 && !bit_fields)) {
        const std::uint8_t* bgr = row + x * (bits_per_pixel / 8);
        out[0] = bgr[2];
        out[1] = bgr[1];
        out[2] = bgr[0];
      } else {
        const std::uint32_t pixel =
            bits_per_pixel == 16 ? u16_at({row, stride}, 2 * x) : u32_at({row, stride}, 4 * x);
        for (int c = 0; c < 3; ++c) out[c] = channels[c].of(pixel, masks[c]);
      }
    }
  }
  return image;
}

}  // namespace ffcv::tools
