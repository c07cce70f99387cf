// Netpbm (P1-P6) decoding: a header of whitespace-separated decimal fields (with '#' comments),
// then the raster as text (P1-P3) or bytes (P4-P6). Every size comes from the file, so each is
// checked against what the file holds before anything is allocated.
#include <cstdint>
#include <span>
#include <string>

#include "ffcv/util/errors.hpp"
#include "image_decoders.hpp"

namespace ffcv::tools {
namespace {

bool is_pnm_space(std::uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_digit(std::uint8_t c) { return c >= '0' && c <= '9'; }

class PnmCursor {
 public:
  explicit PnmCursor(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::size_t position() const { return at_; }
  std::size_t remaining() const { return bytes_.size() - at_; }
  const std::uint8_t* here() const { return bytes_.data() + at_; }
  void advance(std::size_t count) { at_ += count; }

  // Skips whitespace and comments; true when any was skipped.
  bool skip_space() {
    const std::size_t start = at_;
    while (at_ < bytes_.size()) {
      if (is_pnm_space(bytes_[at_])) {
        ++at_;
      } else if (bytes_[at_] == '#') {
        while (at_ < bytes_.size() && bytes_[at_] != '\n' && bytes_[at_] != '\r') ++at_;
      } else {
        break;
      }
    }
    return at_ != start;
  }

  // A decimal number after optional whitespace, at most `limit`.
  std::uint64_t number(const char* what, std::uint64_t limit) {
    skip_space();
    if (at_ >= bytes_.size())
      throw EncodeError(std::string("its PNM data ends before its ") + what);
    if (!is_digit(bytes_[at_])) {
      throw EncodeError(std::string("its PNM ") + what + " at byte " + std::to_string(at_) +
                        " is not a decimal number");
    }
    std::uint64_t value = 0;
    while (at_ < bytes_.size() && is_digit(bytes_[at_])) {
      value = value * 10 + (bytes_[at_] - '0');
      if (value > limit) {
        throw EncodeError(std::string("its PNM ") + what + " at byte " + std::to_string(at_) +
                          " is more than " + std::to_string(limit));
      }
      ++at_;
    }
    return value;
  }

  // One digit 0 or 1 of a plain bitmap, which needs no whitespace between digits.
  int bit() {
    skip_space();
    if (at_ >= bytes_.size()) throw EncodeError("its PNM data ends inside the bitmap");
    const std::uint8_t c = bytes_[at_++];
    if (c != '0' && c != '1') {
      throw EncodeError("its plain PBM bitmap holds '" + std::string(1, static_cast<char>(c)) +
                        "' at byte " + std::to_string(at_ - 1) + " (only 0 and 1 belong there)");
    }
    return c - '0';
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

std::uint8_t scale_to_8_bits(std::uint64_t value, std::uint64_t maxval) {
  return static_cast<std::uint8_t>((value * 255 + maxval / 2) / maxval);
}

void check_sample(std::uint64_t value, std::uint64_t maxval, std::uint64_t index) {
  if (value > maxval) {
    throw EncodeError("its PNM sample " + std::to_string(index) + " is " + std::to_string(value) +
                      ", more than its maxval " + std::to_string(maxval));
  }
}

// What the magic number and the header fields say.
struct PnmHeader {
  int kind = 0;         // the digit of P1 to P6
  bool bitmap = false;  // P1, P4: one bit a pixel, no maxval field
  bool plain = false;   // P1 to P3: the raster as text
  int channels = 1;     // 3 for the pixmaps P3 and P6
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  std::uint64_t maxval = 0;

  std::uint64_t samples() const { return width * height * channels; }
};

// The magic number and the fields after it (width, height and, but for bitmaps, maxval); leaves
// the cursor just after the last field.
PnmHeader read_pnm_header(std::span<const std::uint8_t> bytes, PnmCursor& cursor) {
  if (bytes.size() < 2 || bytes[0] != 'P' || bytes[1] < '1' || bytes[1] > '6') {
    throw EncodeError("it does not start with a PNM signature (P1 to P6)");
  }
  PnmHeader header;
  header.kind = bytes[1] - '0';
  header.bitmap = header.kind == 1 || header.kind == 4;
  header.plain = header.kind <= 3;
  header.channels = (header.kind == 3 || header.kind == 6) ? 3 : 1;
  cursor.advance(2);
  if (cursor.remaining() > 0 && !is_pnm_space(*cursor.here()) && *cursor.here() != '#') {
    throw EncodeError("its PNM signature P" + std::to_string(header.kind) +
                      " is not followed by whitespace");
  }
  header.width = cursor.number("width", kMaxSourceImagePixels);
  header.height = cursor.number("height", kMaxSourceImagePixels);
  header.maxval = header.bitmap ? 1 : cursor.number("maxval", 65535);
  if (header.maxval == 0) throw EncodeError("its PNM maxval is 0");
  check_image_dimensions(header.width, header.height);
  return header;
}

// Checks that what follows the header can hold the raster it announces, and moves the cursor to
// the raster's start.
void start_raster(PnmCursor& cursor, const PnmHeader& header) {
  if (header.plain) {
    // Every sample takes at least one byte of text: a shorter file cannot hold the raster.
    if (header.samples() > cursor.remaining()) {
      throw EncodeError("its PNM data holds " + std::to_string(cursor.remaining()) +
                        " bytes after the header, too few for " + std::to_string(header.samples()) +
                        " samples");
    }
    return;
  }
  // Exactly one whitespace byte separates the header from the raster.
  if (cursor.remaining() == 0 || !is_pnm_space(*cursor.here())) {
    throw EncodeError("its PNM header does not end in a whitespace byte before the raster");
  }
  cursor.advance(1);
  const std::uint64_t row_bytes =
      header.bitmap ? (header.width + 7) / 8
                    : header.width * header.channels * (header.maxval > 255 ? 2 : 1);
  const std::uint64_t needed = row_bytes * header.height;
  if (needed > cursor.remaining()) {
    throw EncodeError("its PNM raster ends after " + std::to_string(cursor.remaining()) + " of " +
                      std::to_string(needed) + " bytes");
  }
}

// A bitmap's pixels: 1 is black, 0 is white; raw rows are padded to whole bytes, most significant
// bit first.
void decode_bitmap(PnmCursor& cursor, const PnmHeader& header, std::uint8_t* out) {
  const std::uint8_t* raw = cursor.here();
  const std::uint64_t row_bytes = (header.width + 7) / 8;
  for (std::uint64_t y = 0; y < header.height; ++y) {
    for (std::uint64_t x = 0; x < header.width; ++x) {
      const int black =
          header.plain ? cursor.bit() : (raw[y * row_bytes + x / 8] >> (7 - x % 8)) & 1;
      const std::uint8_t value = black ? 0 : 255;
      out[0] = out[1] = out[2] = value;
      out += 3;
    }
  }
}

// A graymap's or pixmap's samples (raw ones of 2 bytes, most significant first, when maxval is
// above 255), each scaled from 0..maxval to 0..255; gray is repeated into the three channels.
void decode_samples(PnmCursor& cursor, const PnmHeader& header, std::uint8_t* out) {
  const bool wide = header.maxval > 255;
  const std::uint8_t* raw = cursor.here();
  const std::uint64_t samples = header.samples();
  for (std::uint64_t i = 0; i < samples; ++i) {
    std::uint64_t value = 0;
    if (header.plain) {
      value = cursor.number("sample", 0xffffffffu);
    } else if (wide) {
      value = std::uint64_t{raw[2 * i]} << 8 | raw[2 * i + 1];
    } else {
      value = raw[i];
    }
    check_sample(value, header.maxval, i);
    const std::uint8_t scaled = scale_to_8_bits(value, header.maxval);
    if (header.channels == 1) {
      out[0] = out[1] = out[2] = scaled;
      out += 3;
    } else {
      *out++ = scaled;
    }
  }
}

}  // namespace

RgbImage decode_pnm(std::span<const std::uint8_t> bytes) {
  PnmCursor cursor(bytes);
  const PnmHeader header = read_pnm_header(bytes, cursor);
  start_raster(cursor, header);
  RgbImage image;
  image.width = static_cast<int>(header.width);
  image.height = static_cast<int>(header.height);
  image.pixels.resize(image.byte_size());
  if (header.bitmap) {
    decode_bitmap(cursor, header, image.pixels.data());
  } else {
    decode_samples(cursor, header, image.pixels.data());
  }
  return image;
}

}  // namespace ffcv::tools
