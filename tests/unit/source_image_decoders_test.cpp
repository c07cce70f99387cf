// The source image decoders (tools/sources/image_decoders.hpp): each format's files decode to the
// pixels an independent decoder reads (OpenCV's imread, where this build has imgcodecs) or to
// the values their bytes state (files built here byte by byte), and damaged or truncated files of
// every format are refused with an EncodeError naming the file.
#include <turbojpeg.h>
#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <functional>

#ifdef FFCV_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "ffcv/util/errors.hpp"
#include "sources/image_decoders.hpp"
#include "sources/image_file.hpp"
#include "test_support.hpp"

using namespace ffcv;
using namespace ffcv::tools;
using Bytes = std::vector<std::uint8_t>;
using Rgb = std::array<std::uint8_t, 3>;

namespace {

RgbImage read_rgb(const std::string& path) {
  FieldValue value = read_image_value(path);
  REQUIRE(std::holds_alternative<RgbImage>(value));
  RgbImage image = std::get<RgbImage>(std::move(value));
  REQUIRE(image.pixels.size() == image.byte_size());
  return image;
}

// An image of width x height whose pixel (x, y) is colour(x, y).
RgbImage image_of(int width, int height, const std::function<Rgb(int, int)>& colour) {
  RgbImage image{width, height, Bytes(static_cast<std::size_t>(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const Rgb c = colour(x, y);
      std::copy(c.begin(), c.end(), &image.pixels[(std::size_t(y) * width + x) * 3]);
    }
  }
  return image;
}

// A busy pattern (edges everywhere), so that a wrong row order or channel order shows.
Rgb busy(int x, int y) {
  return {std::uint8_t(x * 37 + y * 11), std::uint8_t(x * 5 + y * 53 + 7),
          std::uint8_t((x ^ y) * 29 + 3)};
}

int max_difference(const RgbImage& a, const RgbImage& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  int worst = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) {
    worst = std::max(worst, std::abs(int(a.pixels[i]) - int(b.pixels[i])));
  }
  return worst;
}

void put_le(Bytes& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(std::uint8_t(value >> (8 * i)));
}

void set_le(Bytes& out, std::size_t at, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[at + i] = std::uint8_t(value >> (8 * i));
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- BMP files built from the format's definition -----------------------------------------------

struct BmpLayout {
  int header_size = 40;  // 12: OS/2 core header
  int bits_per_pixel = 24;
  int compression = 0;               // 0: BI_RGB, 3: BI_BITFIELDS
  std::vector<std::uint32_t> masks;  // red, green, blue (BI_BITFIELDS)
  std::vector<Rgb> palette;
  bool top_down = false;
};

// rows[y] holds row y's pixel bytes (top row first), unpadded.
Bytes bmp_file(const BmpLayout& layout, int width, const std::vector<Bytes>& rows) {
  const int height = static_cast<int>(rows.size());
  const std::size_t stride = (std::size_t(width) * layout.bits_per_pixel + 31) / 32 * 4;
  const bool masks_after_header = layout.compression == 3 && layout.header_size == 40;
  const std::size_t palette_bytes = layout.palette.size() * (layout.header_size == 12 ? 3 : 4);
  const std::size_t data_at =
      14 + layout.header_size + (masks_after_header ? 12 : 0) + palette_bytes;
  Bytes out = {'B', 'M'};
  put_le(out, data_at + stride * height, 4);
  put_le(out, 0, 4);
  put_le(out, data_at, 4);
  put_le(out, layout.header_size, 4);
  if (layout.header_size == 12) {
    put_le(out, width, 2);
    put_le(out, height, 2);
    put_le(out, 1, 2);
    put_le(out, layout.bits_per_pixel, 2);
  } else {
    put_le(out, width, 4);
    put_le(out, std::uint32_t(layout.top_down ? -height : height), 4);
    put_le(out, 1, 2);
    put_le(out, layout.bits_per_pixel, 2);
    put_le(out, layout.compression, 4);
    put_le(out, stride * height, 4);
    put_le(out, 2835, 4);
    put_le(out, 2835, 4);
    put_le(out, layout.palette.size(), 4);
    put_le(out, 0, 4);
    Bytes rest(layout.header_size - 40, 0);  // V4/V5: masks first, the rest zero
    for (std::size_t i = 0; i < layout.masks.size() && layout.header_size > 40; ++i) {
      set_le(rest, 4 * i, layout.masks[i], 4);
    }
    out.insert(out.end(), rest.begin(), rest.end());
    if (masks_after_header) {
      for (const std::uint32_t mask : layout.masks) put_le(out, mask, 4);
    }
  }
  for (const Rgb& c : layout.palette) {
    out.insert(out.end(), {c[2], c[1], c[0]});
    if (layout.header_size != 12) out.push_back(0);
  }
  REQUIRE(out.size() == data_at);
  for (int i = 0; i < height; ++i) {
    Bytes row = rows[layout.top_down ? i : height - 1 - i];
    row.resize(stride, 0);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// Packs palette indices (bits_per_pixel 1, 4 or 8), most significant bits first.
Bytes pack_indices(const std::vector<int>& indices, int bits_per_pixel) {
  Bytes out((indices.size() * bits_per_pixel + 7) / 8, 0);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::size_t bit = i * bits_per_pixel;
    out[bit / 8] |= std::uint8_t(indices[i] << (8 - bits_per_pixel - bit % 8));
  }
  return out;
}

// --- PNG chunks built from the format's definition ---------------------------------------------

// CRC-32 as PNG defines it (ISO 3309, reflected, polynomial 0xedb88320), bit by bit.
std::uint32_t png_crc(const Bytes& bytes) {
  std::uint32_t crc = 0xffffffffu;
  for (const std::uint8_t byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return crc ^ 0xffffffffu;
}

// A chunk: its data's length, its type, its data and the CRC of type and data (big-endian).
Bytes png_chunk(const std::string& type, const Bytes& data) {
  const auto put_be = [](Bytes& out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(std::uint8_t(value >> shift));
  };
  Bytes out;
  put_be(out, static_cast<std::uint32_t>(data.size()));
  const Bytes typed = concat(text(type), data);
  out = concat(out, typed);
  put_be(out, png_crc(typed));
  return out;
}

// --- TIFF files built from the format's definition (uncompressed, one strip) -------------------

Bytes tiff_file(int width, int height, int samples, int photometric,
                const std::vector<std::uint16_t>& extra_samples, const Bytes& pixels) {
  Bytes out = {'I', 'I', 42, 0, 0, 0, 0, 0};
  out.insert(out.end(), pixels.begin(), pixels.end());
  const std::size_t bits_at = out.size();
  for (int s = 0; s < samples; ++s) put_le(out, 8, 2);
  if (out.size() % 2) out.push_back(0);
  const std::size_t ifd_at = out.size();
  set_le(out, 4, ifd_at, 4);
  struct Entry {
    std::uint16_t tag, type;
    std::uint32_t count, value;
  };
  std::vector<Entry> entries = {
      {256, 4, 1, std::uint32_t(width)},
      {257, 4, 1, std::uint32_t(height)},
      {258, 3, std::uint32_t(samples),
       samples <= 2 ? 8u | (samples == 2 ? 8u << 16 : 0u) : std::uint32_t(bits_at)},
      {259, 3, 1, 1},
      {262, 3, 1, std::uint32_t(photometric)},
      {273, 4, 1, 8},
      {277, 3, 1, std::uint32_t(samples)},
      {278, 4, 1, std::uint32_t(height)},
      {279, 4, 1, std::uint32_t(pixels.size())},
      {284, 3, 1, 1},
  };
  if (!extra_samples.empty()) entries.push_back({338, 3, 1, extra_samples[0]});
  put_le(out, entries.size(), 2);
  for (const Entry& e : entries) {
    put_le(out, e.tag, 2);
    put_le(out, e.type, 2);
    put_le(out, e.count, 4);
    put_le(out, e.value, 4);
  }
  put_le(out, 0, 4);
  return out;
}

Bytes interleaved(const RgbImage& image, const std::function<Bytes(const std::uint8_t*)>& pixel) {
  Bytes out;
  for (std::size_t i = 0; i < image.byte_size(); i += 3) {
    const Bytes p = pixel(&image.pixels[i]);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

// Every strict prefix of a file and every file with one byte flipped is refused with an
// EncodeError naming it, or (where the damage leaves a valid file) decodes to a whole image;
// nothing else may happen.
void check_damage_is_contained(const test::TempDir& dir, const Bytes& good, std::size_t step = 1) {
  const std::string path = dir.file("damaged");
  const auto check_contained = [&](const Bytes& bytes) {
    test::write_file(path, bytes);
    try {
      const FieldValue value = read_image_value(path);
      if (const auto* image = std::get_if<RgbImage>(&value)) {
        CHECK(image->pixels.size() == image->byte_size());
      }
    } catch (const EncodeError& error) {
      CHECK_THAT(error.what(), Catch::Contains(path));
    }
  };
  for (std::size_t size = 0; size < good.size(); size += step) {
    check_contained(Bytes(good.begin(), good.begin() + size));
  }
  for (std::size_t at = 0; at < good.size(); at += step) {
    Bytes flipped = good;
    flipped[at] ^= 0xa5;
    check_contained(flipped);
  }
}

void check_refused(const test::TempDir& dir, const Bytes& bytes, const std::string& reason) {
  const std::string path = dir.file("refused");
  test::write_file(path, bytes);
  try {
    (void)read_image_value(path);
    FAIL("decoded a file that should be refused: " << reason);
  } catch (const EncodeError& error) {
    CHECK_THAT(error.what(), Catch::Contains(path) && Catch::Contains(reason));
  }
}

}  // namespace

TEST_CASE("source image formats are told by their first bytes", "[sources][decoders]") {
  CHECK(sniff_image_format(Bytes{0xff, 0xd8, 0xff, 0xe0}) == ImageFormat::kJpeg);
  CHECK(sniff_image_format(Bytes{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}) ==
        ImageFormat::kPng);
  CHECK(sniff_image_format(text("BM")) == ImageFormat::kBmp);
  CHECK(sniff_image_format(text("P4\n")) == ImageFormat::kPnm);
  CHECK(sniff_image_format(text("P7\n")) == ImageFormat::kUnknown);
  CHECK(sniff_image_format(Bytes{'I', 'I', 42, 0}) == ImageFormat::kTiff);
  CHECK(sniff_image_format(Bytes{'M', 'M', 0, 42}) == ImageFormat::kTiff);
  CHECK(sniff_image_format(text(std::string("RIFF\1\0\0\0WEBPVP8 ", 16))) == ImageFormat::kWebp);
  CHECK(sniff_image_format(text(std::string("RIFF\1\0\0\0WAVEfmt ", 16))) == ImageFormat::kUnknown);
  // DICOM's signature sits at byte 128, after a preamble of anything.
  Bytes dicom(128, 0);
  dicom.insert(dicom.end(), {'D', 'I', 'C', 'M'});
  CHECK(sniff_image_format(dicom) == ImageFormat::kUnknown);
}

TEST_CASE("PNM files decode to the values their bytes state", "[sources][decoders]") {
  test::TempDir dir;
  SECTION("P1 and P4 bitmaps: 1 is black, rows padded to bytes in P4") {
    // A 10x2 bitmap: row 0 alternates, row 1 is black then white halves.
    const RgbImage expected = image_of(10, 2, [](int x, int y) {
      const bool black = y == 0 ? x % 2 == 0 : x < 5;
      const std::uint8_t v = black ? 0 : 255;
      return Rgb{v, v, v};
    });
    test::write_file(dir.file("plain.pbm"),
                     text("P1\n# a comment\n10 2\n1010101010\n1 1 1 1 1 0 0 0 0 0\n"));
    CHECK(read_rgb(dir.file("plain.pbm")).pixels == expected.pixels);
    test::write_file(dir.file("raw.pbm"),
                     concat(text("P4 10 2\n"), Bytes{0b10101010, 0b10000000, 0b11111000, 0}));
    CHECK(read_rgb(dir.file("raw.pbm")).pixels == expected.pixels);
  }
  SECTION("P2 and P5 graymaps with maxval 15 and 65535 scale to 8 bits") {
    // 15 and 65535 are 255 in 8 bits; 5 of 15 is 85, 257 * k of 65535 is k.
    const RgbImage expected = image_of(3, 1, [](int x, int) {
      const std::uint8_t v[3] = {0, 85, 255};
      return Rgb{v[x], v[x], v[x]};
    });
    test::write_file(dir.file("a.pgm"), text("P2\n3 1\n15\n0 5\n15\n"));
    CHECK(read_rgb(dir.file("a.pgm")).pixels == expected.pixels);
    test::write_file(dir.file("b.pgm"),
                     concat(text("P5\n3 1 65535\n"), Bytes{0, 0, 0x55, 0x55, 0xff, 0xff}));
    CHECK(read_rgb(dir.file("b.pgm")).pixels == expected.pixels);
  }
  SECTION("P3 and P6 pixmaps keep their channel order") {
    const RgbImage expected = image_of(4, 3, busy);
    Bytes ascii = text("P3\n4 3\n255\n");
    for (const std::uint8_t v : expected.pixels) {
      const Bytes number = text(std::to_string(v) + " ");
      ascii.insert(ascii.end(), number.begin(), number.end());
    }
    test::write_file(dir.file("a.ppm"), ascii);
    CHECK(read_rgb(dir.file("a.ppm")).pixels == expected.pixels);
    test::write_file(dir.file("b.ppm"), concat(text("P6\n4 3\n255\n"), expected.pixels));
    CHECK(read_rgb(dir.file("b.ppm")).pixels == expected.pixels);
    check_damage_is_contained(dir, concat(text("P6\n4 3\n255\n"), expected.pixels));
  }
  SECTION("malformed PNM files are refused, saying what is wrong") {
    check_refused(dir, text("P6\n4 3\n255\n"), "raster ends after 0 of 36 bytes");
    check_refused(dir, text("P5 2 2 0\n\0\0\0\0"), "maxval is 0");
    check_refused(dir, text("P5 2 2 65536\n"), "maxval");
    check_refused(dir, text("P2 2 1 10\n3 11\n"), "11, more than its maxval 10");
    check_refused(dir, text("P5 x 2 255\n"), "width at byte 3 is not a decimal number");
    check_refused(dir, text("P6 99999999999 2 255\n"), "width");
    check_refused(dir, text("P5 0 2 255\n"), "0x2");
    check_refused(dir, text("P1 2 2\n1 0 2 1\n"), "only 0 and 1");
    check_refused(dir, text("P1 4 4\n1 0\n"), "too few for 16 samples");
    check_refused(dir, text("P5 1 1 255"), "whitespace byte before the raster");
    check_refused(dir, concat(text("P4"), Bytes{0xb0, 1, 1}), "not followed by whitespace");
  }
}

TEST_CASE("BMP files of every uncompressed kind decode to the values their bytes state",
          "[sources][decoders]") {
  test::TempDir dir;
  const int width = 11, height = 5;  // rows that need padding at every depth
  const std::string path = dir.file("x.bmp");
  auto decode = [&](const Bytes& file) {
    test::write_file(path, file);
    return read_rgb(path);
  };
  SECTION("1, 4 and 8 bits per pixel through a palette") {
    for (const int bits : {1, 4, 8}) {
      BmpLayout layout;
      layout.bits_per_pixel = bits;
      for (int i = 0; i < (1 << bits); ++i) {
        layout.palette.push_back(
            {std::uint8_t(i * 3 + 1), std::uint8_t(255 - i), std::uint8_t(i * 7)});
      }
      auto index = [bits](int x, int y) { return (x * 5 + y * 3) % (1 << bits); };
      std::vector<Bytes> rows;
      for (int y = 0; y < height; ++y) {
        std::vector<int> indices;
        for (int x = 0; x < width; ++x) indices.push_back(index(x, y));
        rows.push_back(pack_indices(indices, bits));
      }
      const RgbImage expected =
          image_of(width, height, [&](int x, int y) { return layout.palette[index(x, y)]; });
      INFO(bits << " bits per pixel");
      CHECK(decode(bmp_file(layout, width, rows)).pixels == expected.pixels);
      layout.header_size = 12;  // OS/2's core header: 3-byte palette entries
      CHECK(decode(bmp_file(layout, width, rows)).pixels == expected.pixels);
    }
  }
  SECTION("24 and 32 bits per pixel, bottom-up and top-down") {
    const RgbImage expected = image_of(width, height, busy);
    for (const int bits : {24, 32}) {
      for (const bool top_down : {false, true}) {
        BmpLayout layout;
        layout.bits_per_pixel = bits;
        layout.top_down = top_down;
        std::vector<Bytes> rows;
        for (int y = 0; y < height; ++y) {
          Bytes row;
          for (int x = 0; x < width; ++x) {
            const Rgb c = busy(x, y);
            row.insert(row.end(), {c[2], c[1], c[0]});
            if (bits == 32) row.push_back(0x80);
          }
          rows.push_back(row);
        }
        INFO(bits << " bits per pixel, top-down " << top_down);
        CHECK(decode(bmp_file(layout, width, rows)).pixels == expected.pixels);
        if (bits == 24 && !top_down) check_damage_is_contained(dir, bmp_file(layout, width, rows));
      }
    }
  }
  SECTION("16 bits per pixel (5-5-5, and 5-6-5 bit fields) and 32-bit fields in a V5 header") {
    // Full and empty channels are exact in any width: 31 (or 63) of 31 (63) is 255.
    const RgbImage expected = image_of(width, height, [](int x, int y) {
      const int k = (x + 2 * y) % 4;
      return Rgb{std::uint8_t(k & 1 ? 255 : 0), std::uint8_t(k & 2 ? 255 : 0),
                 std::uint8_t(k == 3 ? 0 : 255)};
    });
    auto rows_of = [&](int bytes_per_pixel, const std::function<std::uint32_t(Rgb)>& pack) {
      std::vector<Bytes> rows;
      for (int y = 0; y < height; ++y) {
        Bytes row;
        for (int x = 0; x < width; ++x) {
          const std::uint8_t* p = &expected.pixels[(std::size_t(y) * width + x) * 3];
          put_le(row, pack({p[0], p[1], p[2]}), bytes_per_pixel);
        }
        rows.push_back(row);
      }
      return rows;
    };
    BmpLayout rgb555;
    rgb555.bits_per_pixel = 16;
    CHECK(decode(bmp_file(rgb555, width,
                          rows_of(2,
                                  [](Rgb c) {
                                    return (c[0] >> 3) << 10 | (c[1] >> 3) << 5 | c[2] >> 3;
                                  })))
              .pixels == expected.pixels);
    BmpLayout rgb565 = rgb555;
    rgb565.compression = 3;
    rgb565.masks = {0xf800, 0x07e0, 0x001f};
    CHECK(decode(bmp_file(rgb565, width,
                          rows_of(2,
                                  [](Rgb c) {
                                    return (c[0] >> 3) << 11 | (c[1] >> 2) << 5 | c[2] >> 3;
                                  })))
              .pixels == expected.pixels);
    BmpLayout fields32;
    fields32.header_size = 124;
    fields32.bits_per_pixel = 32;
    fields32.compression = 3;
    fields32.masks = {0x000000ff, 0x0000ff00, 0x00ff0000};  // R, G, B, X in byte order
    const RgbImage busy_image = image_of(width, height, busy);
    std::vector<Bytes> rows;
    for (int y = 0; y < height; ++y) {
      Bytes row;
      for (int x = 0; x < width; ++x) {
        const Rgb c = busy(x, y);
        row.insert(row.end(), {c[0], c[1], c[2], 0x11});
      }
      rows.push_back(row);
    }
    CHECK(decode(bmp_file(fields32, width, rows)).pixels == busy_image.pixels);
  }
  SECTION("compressed, odd and inconsistent BMP files are refused, saying what is wrong") {
    BmpLayout layout;
    layout.bits_per_pixel = 8;
    layout.palette = {{1, 2, 3}, {4, 5, 6}};
    const std::vector<Bytes> rows(height, Bytes(width, 1));
    Bytes rle = bmp_file(layout, width, rows);
    set_le(rle, 30, 1, 4);  // BI_RLE8
    check_refused(dir, rle, "RLE-compressed");
    check_refused(dir, bmp_file(layout, width, std::vector<Bytes>(height, Bytes(width, 2))),
                  "uses colour 2 of a palette of 2");
    Bytes header = bmp_file(layout, width, rows);
    set_le(header, 14, 64, 4);
    check_refused(dir, header, "info header has 64 bytes");
    Bytes depth = bmp_file(layout, width, rows);
    set_le(depth, 28, 2, 2);
    check_refused(dir, depth, "2 bits per pixel");
    Bytes offset = bmp_file(layout, width, rows);
    set_le(offset, 10, 0xfffffff0, 4);
    check_refused(dir, offset, "runs past the end of the file");
    Bytes huge = bmp_file(layout, width, rows);
    set_le(huge, 18, 0x7fffffff, 4);
    check_refused(dir, huge, "pixels a source image may have");
    Bytes truncated = bmp_file(layout, width, rows);
    truncated.pop_back();
    check_refused(dir, truncated, "runs past the end of the file");
    BmpLayout gap;
    gap.bits_per_pixel = 16;
    gap.compression = 3;
    gap.masks = {0xf00f, 0x00f0, 0x0f00};
    check_refused(dir, bmp_file(gap, width, std::vector<Bytes>(height, Bytes(2 * width, 0))),
                  "red bit mask is not one run of bits");
  }
}

TEST_CASE("TIFF files decode to the values their bytes state", "[sources][decoders]") {
  if (!can_decode_image_format(ImageFormat::kTiff)) {
    test::TempDir dir;
    check_refused(dir, tiff_file(1, 1, 3, 2, {}, {1, 2, 3}), "built without libtiff");
    test::skip_test("this build has no libtiff");
    return;
  }
  test::TempDir dir;
  const std::string path = dir.file("x.tif");
  const RgbImage expected = image_of(9, 7, busy);
  auto decode = [&](const Bytes& file) {
    test::write_file(path, file);
    return read_rgb(path);
  };
  // Photometric 2: RGB; 1: gray, 0 is black; 0: gray, 0 is white.
  CHECK(decode(tiff_file(9, 7, 3, 2, {}, expected.pixels)).pixels == expected.pixels);
  const Bytes rgb_file = tiff_file(9, 7, 3, 2, {}, expected.pixels);
  const Bytes gray = interleaved(expected, [](const std::uint8_t* p) { return Bytes{p[1]}; });
  const RgbImage gray_expected = image_of(9, 7, [&](int x, int y) {
    const std::uint8_t g = gray[std::size_t(y) * 9 + x];
    return Rgb{g, g, g};
  });
  CHECK(decode(tiff_file(9, 7, 1, 1, {}, gray)).pixels == gray_expected.pixels);
  const RgbImage inverted = image_of(9, 7, [&](int x, int y) {
    const std::uint8_t g = std::uint8_t(255 - gray[std::size_t(y) * 9 + x]);
    return Rgb{g, g, g};
  });
  CHECK(decode(tiff_file(9, 7, 1, 0, {}, gray)).pixels == inverted.pixels);
  // RGBA with unassociated (2) or associated (1) alpha: the colours as stored, alpha dropped.
  const Bytes rgba = interleaved(expected, [](const std::uint8_t* p) {
    return Bytes{p[0], p[1], p[2], std::uint8_t(p[0] / 2)};
  });
  CHECK(decode(tiff_file(9, 7, 4, 2, {2}, rgba)).pixels == expected.pixels);
  CHECK(decode(tiff_file(9, 7, 4, 2, {1}, rgba)).pixels == expected.pixels);

  Bytes far_ifd = rgb_file;
  set_le(far_ifd, 4, 0x7ffffff0, 4);
  check_refused(dir, far_ifd, "libtiff cannot open it");
  Bytes short_strip = rgb_file;
  short_strip.resize(8 + expected.pixels.size() / 2);  // the IFD is gone too
  check_refused(dir, short_strip, "TIFF");
  Bytes far_strip = rgb_file;
  // The strip offset (tag 273) points past the end of the file.
  const std::size_t ifd = far_strip[4] | far_strip[5] << 8 | far_strip[6] << 16;
  for (std::size_t e = ifd + 2; e + 12 <= far_strip.size(); e += 12) {
    if (far_strip[e] == 0x11 && far_strip[e + 1] == 0x01) set_le(far_strip, e + 8, 1 << 20, 4);
  }
  check_refused(dir, far_strip, "libtiff cannot decode it");
  check_damage_is_contained(dir, rgb_file, 3);
}

TEST_CASE("CMYK JPEGs decode through libjpeg as Adobe's inverted CMYK", "[sources][decoders]") {
  test::TempDir dir;
  // Four flat 8x8 blocks of CMYK (stored inverted: 255 is no ink), coded at quality 100 without
  // subsampling, so each decodes within a step or two of its value.
  const std::array<std::array<std::uint8_t, 4>, 4> blocks = {
      {{255, 255, 255, 255}, {255, 0, 128, 255}, {40, 200, 255, 128}, {255, 255, 255, 0}}};
  Bytes cmyk(16 * 16 * 4);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) {
      const auto& c = blocks[(y / 8) * 2 + x / 8];
      std::copy(c.begin(), c.end(), &cmyk[(std::size_t(y) * 16 + x) * 4]);
    }
  }
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, cmyk.data(), 16, 0, 16, TJPF_CMYK, &jpeg, &size, TJSAMP_444, 100,
                      0) == 0);
  const Bytes file(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);
  const std::string path = dir.file("cmyk.jpg");
  test::write_file(path, file);
  const RgbImage image = read_rgb(path);
  REQUIRE(image.width == 16);
  for (int b = 0; b < 4; ++b) {
    const auto& c = blocks[b];
    const std::uint8_t* p =
        &image.pixels[((std::size_t(b / 2) * 8 + 4) * 16 + (b % 2) * 8 + 4) * 3];
    for (int channel = 0; channel < 3; ++channel) {
      INFO("block " << b << " channel " << channel);
      CHECK(std::abs(int(p[channel]) - c[channel] * c[3] / 255) <= 3);
    }
  }
#ifdef FFCV_HAVE_IMGCODECS
  cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR);
  REQUIRE(!bgr.empty());
  cv::cvtColor(bgr, bgr, cv::COLOR_BGR2RGB);
  CHECK(max_difference(image, RgbImage{16, 16, Bytes(bgr.data, bgr.data + 16 * 16 * 3)}) <= 2);
#endif
  // Cut inside the entropy-coded data (after the start-of-scan marker FF DA), so that the
  // headers read and libjpeg itself finds the data missing.
  std::size_t scan = 2;
  while (scan + 1 < file.size() && !(file[scan] == 0xff && file[scan + 1] == 0xda)) ++scan;
  REQUIRE(scan + 1 < file.size());
  check_refused(dir, Bytes(file.begin(), file.begin() + (scan + file.size()) / 2),
                "libjpeg cannot decode it");
  check_damage_is_contained(dir, file, 7);
}

TEST_CASE("PNG, TIFF, WebP, BMP and PNM files match OpenCV's imread of the same file",
          "[sources][decoders]") {
#ifndef FFCV_HAVE_IMGCODECS
  test::skip_test("this build has no OpenCV imgcodecs, the independent decoder of this test");
#else
  test::TempDir dir;
  cv::Mat bgr(23, 37, CV_8UC3);
  for (int y = 0; y < bgr.rows; ++y) {
    for (int x = 0; x < bgr.cols; ++x) {
      const Rgb c = busy(x, y);
      bgr.at<cv::Vec3b>(y, x) = {c[2], c[1], c[0]};
    }
  }
  cv::Mat gray, bgra, wide;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  cv::cvtColor(bgr, bgra, cv::COLOR_BGR2BGRA);
  for (int y = 0; y < bgra.rows; ++y) {
    for (int x = 0; x < bgra.cols; ++x) bgra.at<cv::Vec4b>(y, x)[3] = std::uint8_t(x * 7);
  }
  bgr.convertTo(wide, CV_16UC3, 257.0);
  wide.at<cv::Vec3w>(3, 4) = {1000, 30000, 65000};  // not a multiple of 257
  struct Case {
    std::string name;
    const cv::Mat* image;
    std::vector<int> params;
    ImageFormat format;
    int tolerance;
  };
  const std::vector<Case> cases = {
      {"rgb.png", &bgr, {}, ImageFormat::kPng, 0},
      {"gray.png", &gray, {}, ImageFormat::kPng, 0},
      {"alpha.png", &bgra, {}, ImageFormat::kPng, 0},
      {"wide.png", &wide, {}, ImageFormat::kPng, 1},
      {"rgb.tif", &bgr, {}, ImageFormat::kTiff, 0},
      {"gray.tif", &gray, {}, ImageFormat::kTiff, 0},
      {"alpha.tif", &bgra, {}, ImageFormat::kTiff, 0},
      {"lossless.webp", &bgr, {cv::IMWRITE_WEBP_QUALITY, 101}, ImageFormat::kWebp, 0},
      {"lossy.webp", &bgr, {cv::IMWRITE_WEBP_QUALITY, 80}, ImageFormat::kWebp, 0},
      {"rgb.bmp", &bgr, {}, ImageFormat::kBmp, 0},
      {"gray.bmp", &gray, {}, ImageFormat::kBmp, 0},
      {"raw.ppm", &bgr, {}, ImageFormat::kPnm, 0},
      {"raw.pgm", &gray, {}, ImageFormat::kPnm, 0},
      {"plain.ppm", &bgr, {cv::IMWRITE_PXM_BINARY, 0}, ImageFormat::kPnm, 0},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string path = dir.file(c.name);
    REQUIRE(cv::imwrite(path, *c.image, c.params));
    if (!can_decode_image_format(c.format)) {
      check_refused(dir, test::read_file(path), "built without");
      continue;
    }
    cv::Mat reference = cv::imread(path, cv::IMREAD_COLOR);
    REQUIRE(!reference.empty());
    cv::cvtColor(reference, reference, cv::COLOR_BGR2RGB);
    const RgbImage ours = read_rgb(path);
    const RgbImage theirs{reference.cols, reference.rows,
                          Bytes(reference.data, reference.data + reference.total() * 3)};
    CHECK(max_difference(ours, theirs) <= c.tolerance);
    const Bytes file = test::read_file(path);
    // Cut in half: the pixel data is incomplete in every format.
    check_refused(dir, Bytes(file.begin(), file.begin() + file.size() / 2),
                  image_format_name(c.format));
    check_damage_is_contained(dir, file, std::max<std::size_t>(1, file.size() / 97));
  }
#endif
}

TEST_CASE("a PNG whose header claims more pixels than its data can hold is refused at once",
          "[sources][decoders]") {
  test::TempDir dir;
  // An RGBA PNG of side 60000 or 10000 (14.4 GB or 400 MB of pixels) whose IDAT holds an empty
  // zlib stream: a whole, well-formed file of 65 bytes that libpng opens.
  auto png_of_side = [](std::uint32_t side) {
    Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    Bytes ihdr;
    for (int i = 0; i < 2; ++i) {
      ihdr.insert(ihdr.end(), {std::uint8_t(side >> 24), std::uint8_t(side >> 16),
                               std::uint8_t(side >> 8), std::uint8_t(side)});
    }
    ihdr.insert(ihdr.end(), {8, 6, 0, 0, 0});
    png = concat(png, png_chunk("IHDR", ihdr));
    png = concat(png, png_chunk("IDAT", {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}));
    return concat(png, png_chunk("IEND", {}));
  };
  const Bytes huge = png_of_side(60000);
  const Bytes large = png_of_side(10000);
  REQUIRE(large.size() == 65);
  if (!can_decode_image_format(ImageFormat::kPng)) {
    check_refused(dir, large, "built without libpng");
    test::skip_test("this build has no libpng");
    return;
  }
  check_refused(dir, huge, "pixels a source image may have");
  check_refused(dir, large, "10000x10000 pixels, more than its 65 bytes can hold");
  // The same file of a side its data can hold decodes: the empty stream is too short for it.
  check_refused(dir, png_of_side(4), "libpng cannot decode it");
}
