// Fuzz harness: the JPEG decoders on any bytes. The first 12 input bytes choose a crop window
// (top, left, height, width as fractions of the frame), the output size it is scaled toward,
// the IDCT and the scale set; the rest is the file. It is decoded by the window decoder (as
// random_resized_crop and center_crop do), whole (decode_jpeg), and checked (validate_jpeg). A
// file may be refused with ffcv::EncodeError; a crash, a sanitizer report or a window written
// outside its buffer is a finding.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/jpeg_window.hpp"
#include "ffcv/util/errors.hpp"

namespace {

// A byte as a fraction of `extent`: 0..extent.
int part(std::uint8_t byte, int extent) {
  return static_cast<int>(std::int64_t(byte) * extent / 255);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kParams = 12;
  if (size < kParams) return 0;
  const std::uint8_t* p = data;
  const std::span<const std::uint8_t> jpeg(data + kParams, size - kParams);
  ffcv::JpegInfo info;
  try {
    info = ffcv::read_jpeg_info(jpeg);
  } catch (const ffcv::Error&) {
    return 0;
  }
  // Frames are limited to 16 megapixels here, as a dataset's images are; libjpeg itself takes
  // up to 65500 x 65500.
  if (double(info.width) * info.height > 16e6) return 0;
  ffcv::JpegWindowRequest request;
  request.top = part(p[0], info.height - 1);
  request.left = part(p[1], info.width - 1);
  request.height = std::max(1, part(p[2], info.height - request.top));
  request.width = std::max(1, part(p[3], info.width - request.left));
  request.min_out_width = part(p[4], 512);
  request.min_out_height = part(p[5], 512);
  request.fast_dct = p[6] & 1;
  request.all_scales = p[6] & 2;
  if (p[6] & 4) {  // the frame size the metadata states, sometimes wrong
    request.frame_width = info.width + (p[7] & 1);
    request.frame_height = info.height;
  }
  std::vector<std::uint8_t> out;
  try {
    const ffcv::DecodedWindow window = ffcv::decode_jpeg_window(jpeg, request, out);
    if (out.size() < std::size_t(window.width) * window.height * 3) std::abort();
    if (window.crop_x < 0 || window.crop_y < 0 ||
        window.crop_x + window.crop_w > window.width + 1e-6 ||
        window.crop_y + window.crop_h > window.height + 1e-6) {
      std::abort();  // the window must lie inside the decoded image
    }
  } catch (const ffcv::Error&) {
  }
  try {
    const ffcv::RgbImage image =
        ffcv::decode_jpeg(jpeg, {.fast_dct = bool(p[8] & 1), .min_width = part(p[9], 64)});
    if (image.pixels.size() != image.byte_size()) std::abort();
  } catch (const ffcv::Error&) {
  }
  try {
    ffcv::validate_jpeg(jpeg, p[10] & 1 ? info.width : 0, p[10] & 1 ? info.height : 0);
  } catch (const ffcv::Error&) {
  }
  return 0;
}
