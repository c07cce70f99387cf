// CMYK and YCCK JPEG decoding through libjpeg's own API (TurboJPEG cannot convert them to RGB):
// libjpeg gives CMYK rows, converted here as Adobe's inverted CMYK. libjpeg reports errors by
// longjmp; the state that outlives the jump is on the heap, so no C++ object is skipped.
#include <csetjmp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "ffcv/util/errors.hpp"
#include "image_decoders.hpp"

namespace ffcv::tools {
namespace {

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
};

[[noreturn]] void fail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// A warning (corrupt entropy data, a premature end) fails the decode, as for every JPEG the
// writer reads: libjpeg would fill the damage in with gray.
void on_message(j_common_ptr info, int level) {
  if (level < 0) fail(info);
}

struct Decoding {
  jpeg_decompress_struct info;
  JpegErrors errors;
  bool created = false;
  RgbImage image;
  std::vector<std::uint8_t> row;

  ~Decoding() {
    if (created) jpeg_destroy_decompress(&info);
  }
};

std::uint8_t times_key(std::uint8_t value, std::uint8_t key) {
  return static_cast<std::uint8_t>((unsigned{value} * key + 127) / 255);
}

}  // namespace

RgbImage decode_cmyk_jpeg(std::span<const std::uint8_t> bytes) {
  const auto state = std::make_unique<Decoding>();
  jpeg_decompress_struct* info = &state->info;
  info->err = jpeg_std_error(&state->errors.manager);
  state->errors.manager.error_exit = fail;
  state->errors.manager.emit_message = on_message;
  if (setjmp(state->errors.jump)) {
    throw EncodeError(std::string("libjpeg cannot decode it: ") + state->errors.message);
  }
  jpeg_create_decompress(info);
  state->created = true;
  jpeg_mem_src(info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(info, TRUE);
  if (info->jpeg_color_space != JCS_CMYK && info->jpeg_color_space != JCS_YCCK) {
    throw EncodeError("it is a JPEG of neither CMYK nor YCCK colour that TurboJPEG cannot read");
  }
  check_image_dimensions(info->image_width, info->image_height);
  info->out_color_space = JCS_CMYK;
  jpeg_start_decompress(info);
  RgbImage& image = state->image;
  image.width = static_cast<int>(info->output_width);
  image.height = static_cast<int>(info->output_height);
  image.pixels.resize(image.byte_size());
  state->row.resize(std::size_t{info->output_width} * 4);
  while (info->output_scanline < info->output_height) {
    std::uint8_t* out = image.pixels.data() + std::size_t{info->output_scanline} * image.width * 3;
    JSAMPROW row = state->row.data();
    if (jpeg_read_scanlines(info, &row, 1) != 1) {
      throw EncodeError("libjpeg stopped at row " + std::to_string(info->output_scanline));
    }
    for (std::size_t x = 0; x < info->output_width; ++x) {
      const std::uint8_t* cmyk = row + 4 * x;
      out[3 * x] = times_key(cmyk[0], cmyk[3]);
      out[3 * x + 1] = times_key(cmyk[1], cmyk[3]);
      out[3 * x + 2] = times_key(cmyk[2], cmyk[3]);
    }
  }
  jpeg_finish_decompress(info);
  return std::move(image);
}

}  // namespace ffcv::tools
