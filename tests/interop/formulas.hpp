// Deterministic sample values shared by the interoperability tests, mirrored in formulas.py.
//
// Every value is a function of the sample index (and, for arrays, the element index), so a
// writer in one language and a checker in the other agree without exchanging the data itself:
//   pix(i, y, x, c)            = (i*31 + y*3 + x*5 + c*7) % 256            raw images, exact
//   smooth(i, y, x, c, W, H)   = 10 + (i*7)%40 + c*25 + (x*90)/max(W-1,1) + (y*60)/max(H-1,1)
//                                                                       JPEG images, compared by
//                                                                       MAE
//   nd_code(i, k)              = (i*131 + k*7) % 251, mapped per dtype by nd_element()
//   runs(i, k)                 = (i*7 + k/4096) % 256                      long runs (compress
//   well) bytes_code(i, k)           = (i*17 + k*3 + 1) % 256
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ffcv/format/dtype.hpp"
#include "ffcv/format/value.hpp"
#include "ffcv/util/little_endian.hpp"

namespace interop {

inline int pix(std::uint64_t i, int y, int x, int c) {
  return static_cast<int>((i * 31 + std::uint64_t(y) * 3 + std::uint64_t(x) * 5 + c * 7) % 256);
}

inline int smooth(std::uint64_t i, int y, int x, int c, int width, int height) {
  return static_cast<int>(10 + (i * 7) % 40 + c * 25 + (x * 90) / std::max(width - 1, 1) +
                          (y * 60) / std::max(height - 1, 1));
}

// The named image formula's pixel; throws on an unknown name.
inline int image_pixel(const std::string& formula, std::uint64_t i, int y, int x, int c, int width,
                       int height) {
  if (formula == "pix") return pix(i, y, x, c);
  if (formula == "smooth") return smooth(i, y, x, c, width, height);
  throw std::runtime_error("unknown image formula '" + formula + "'");
}

inline ffcv::RgbImage make_image(const std::string& formula, std::uint64_t i, int width,
                                 int height) {
  ffcv::RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(image.byte_size());
  std::size_t n = 0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        image.pixels[n++] =
            static_cast<std::uint8_t>(image_pixel(formula, i, y, x, c, width, height));
      }
    }
  }
  return image;
}

inline int nd_code(std::uint64_t i, std::uint64_t k) {
  return static_cast<int>((i * 131 + k * 7) % 251);
}

inline int runs(std::uint64_t i, std::uint64_t k) {
  return static_cast<int>((i * 7 + k / 4096) % 256);
}

inline int bytes_code(std::uint64_t i, std::uint64_t k) {
  return static_cast<int>((i * 17 + k * 3 + 1) % 256);
}

// IEEE binary16 bits of `value`, which must be zero or a normal half exactly representable.
inline std::uint16_t half_bits(double value) {
  if (value == 0) return std::signbit(value) ? 0x8000 : 0;
  const std::uint16_t sign = value < 0 ? 0x8000 : 0;
  int exponent = 0;
  const double mantissa = std::frexp(std::fabs(value), &exponent);  // in [0.5, 1)
  const int biased = exponent - 1 + 15;
  const double fraction = (mantissa * 2 - 1) * 1024;
  if (biased <= 0 || biased >= 31 || fraction != std::floor(fraction)) {
    throw std::runtime_error("value " + std::to_string(value) + " is not an exact normal half");
  }
  return static_cast<std::uint16_t>(sign | (biased << 10) | static_cast<int>(fraction));
}

// Stores element `code` of an array of `dtype` (little-endian or one-byte types):
//   b: code % 3 == 0     u: code * M     i: (code - 125) * M     f: code * 0.25 - 20
// with M = 1, 257, 65537, 1000000007 for 1, 2, 4, 8-byte integers.
inline void store_element(const ffcv::DType& dtype, int code, std::uint8_t* out) {
  if (dtype.byte_order == '>') throw std::runtime_error("big-endian dtypes are not used here");
  const std::int64_t multiplier = dtype.itemsize == 1   ? 1
                                  : dtype.itemsize == 2 ? 257
                                  : dtype.itemsize == 4 ? 65537
                                                        : 1000000007;
  switch (dtype.kind) {
    case 'b':
      out[0] = code % 3 == 0 ? 1 : 0;
      return;
    case 'u':
    case 'i': {
      const std::int64_t value = dtype.kind == 'u' ? code * multiplier : (code - 125) * multiplier;
      const auto bits = static_cast<std::uint64_t>(value);
      for (std::size_t b = 0; b < dtype.itemsize; ++b)
        out[b] = static_cast<std::uint8_t>(bits >> (8 * b));
      return;
    }
    case 'f': {
      const double value = code * 0.25 - 20.0;
      if (dtype.itemsize == 2) {
        ffcv::store_le(out, half_bits(value));
      } else if (dtype.itemsize == 4) {
        ffcv::store_le(out, static_cast<float>(value));
      } else {
        ffcv::store_le(out, value);
      }
      return;
    }
    default:
      throw std::runtime_error("dtype " + dtype.typestr() + " is not used here");
  }
}

// The bytes of sample i's array under formula "nd_code" or "runs" (runs: one-byte types only,
// element value = runs(i, k) as that type's bits).
inline std::vector<std::uint8_t> make_array_bytes(const std::string& formula,
                                                  const ffcv::DType& dtype, std::uint64_t i,
                                                  std::uint64_t count) {
  std::vector<std::uint8_t> bytes(count * dtype.itemsize);
  for (std::uint64_t k = 0; k < count; ++k) {
    if (formula == "nd_code") {
      store_element(dtype, nd_code(i, k), bytes.data() + k * dtype.itemsize);
    } else if (formula == "runs" && dtype.itemsize == 1 && dtype.kind != 'b') {
      bytes[k] = static_cast<std::uint8_t>(runs(i, k));
    } else {
      throw std::runtime_error("unknown array formula '" + formula + "' for " + dtype.typestr());
    }
  }
  return bytes;
}

inline std::vector<std::uint8_t> make_bytes(std::uint64_t i, std::uint64_t length) {
  std::vector<std::uint8_t> bytes(length);
  for (std::uint64_t k = 0; k < length; ++k) bytes[k] = static_cast<std::uint8_t>(bytes_code(i, k));
  return bytes;
}

}  // namespace interop
