// Fuzz harness: the sources `ffcv write` reads, on any bytes. The first byte picks the source:
//   0: IDX (Fashion-MNIST's format, gzipped or not): images and labels files;
//   1: .npy features and targets (NpySource, bit-packed when the second byte is odd);
//   2: one image file of an image folder (read_image_value: RGB and gray JPEGs kept encoded,
//      every other format through its own decoder, tools/sources/image_decoders.hpp), then
//      encoded by the image field as the writer would: a JPEG's headers read for keeping it
//      as it came (jpeg_coding.hpp), its DCT-scaled decode and resize, or its check.
// The second byte is an option (its low bit: pack bits); for two files, the next two bytes give
// the first file's length (little-endian). The first 64 samples are loaded. A file may be refused
// with an ffcv::Error; anything else is a finding.
#include <cstdint>
#include <cstdlib>
#include <variant>
#include <vector>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/util/errors.hpp"
#include "fuzz_input_file.hpp"
#include "sources/idx_source.hpp"
#include "sources/image_file.hpp"
#include "sources/npy_source.hpp"

namespace {

void load_some(const ffcv::SampleSource& source) {
  for (std::uint64_t i = 0; i < source.size() && i < 64; ++i) (void)source.load(i);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ffcv::fuzz::FuzzInputFile first("fuzz-first"), second("fuzz-second");
  if (size < 4) return 0;
  const std::uint8_t kind = data[0] % 3;
  const bool option = data[1] & 1;
  std::size_t split = std::size_t(data[2]) | std::size_t(data[3]) << 8;
  data += 4;
  size -= 4;
  if (split > size) split = size;
  try {
    if (kind == 0) {
      const ffcv::tools::IdxSource source(first.hold(data, split),
                                          second.hold(data + split, size - split));
      load_some(source);
    } else if (kind == 1) {
      const ffcv::tools::NpySource source(first.hold(data, split),
                                          second.hold(data + split, size - split), option);
      (void)source.fields();
      load_some(source);
    } else {
      const ffcv::FieldValue value = ffcv::tools::read_image_value(first.hold(data, size));
      if (const auto* image = std::get_if<ffcv::RgbImage>(&value)) {
        if (image->pixels.size() != image->byte_size()) std::abort();
      }
      ffcv::RgbImageOptions options;
      options.write_mode = ffcv::ImageWriteMode::kJpg;
      options.max_resolution = option ? 16 : 4096;
      const ffcv::RgbImageField field(options);
      std::vector<std::uint8_t> column(field.column_type().size);
      std::vector<ffcv::EncodedAllocation> heap;
      ffcv::EncodeTally tally;
      field.encode(value, column.data(), heap, {0, 0, &tally});
    }
  } catch (const ffcv::Error&) {
  }
  return 0;
}
