// TIFF decoding through libtiff, reading from memory (TIFFClientOpenExt) with per-handle error
// and warning handlers, so that libtiff's messages land in our error instead of on stderr.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "ffcv/util/errors.hpp"
#include "image_decoders.hpp"

#ifdef FFCV_HAVE_LIBTIFF
#include <tiffio.h>
#endif

namespace ffcv::tools {

#ifdef FFCV_HAVE_LIBTIFF

namespace {

// libtiff's view of the file: bytes in memory and a read position.
struct MemoryFile {
  std::span<const std::uint8_t> bytes;
  std::uint64_t at = 0;
  std::string error;  // libtiff's first error message
};

tmsize_t read_proc(thandle_t handle, void* buffer, tmsize_t size) {
  auto* file = static_cast<MemoryFile*>(handle);
  if (size <= 0 || file->at >= file->bytes.size()) return 0;
  const std::uint64_t count =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(size), file->bytes.size() - file->at);
  std::memcpy(buffer, file->bytes.data() + file->at, count);
  file->at += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t write_proc(thandle_t, void*, tmsize_t) { return 0; }

toff_t seek_proc(thandle_t handle, toff_t offset, int whence) {
  auto* file = static_cast<MemoryFile*>(handle);
  std::uint64_t base = 0;
  if (whence == SEEK_CUR) base = file->at;
  if (whence == SEEK_END) base = file->bytes.size();
  // Offsets are unsigned here: a position before the start wraps and is refused.
  if (offset > UINT64_MAX - base) return static_cast<toff_t>(-1);
  file->at = base + offset;
  return file->at;
}

int close_proc(thandle_t) { return 0; }

toff_t size_proc(thandle_t handle) { return static_cast<MemoryFile*>(handle)->bytes.size(); }

int map_proc(thandle_t handle, void** base, toff_t* size) {
  auto* file = static_cast<MemoryFile*>(handle);
  *base = const_cast<std::uint8_t*>(file->bytes.data());
  *size = file->bytes.size();
  return 1;
}

void unmap_proc(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user_data, const char*, const char* format, va_list args) {
  auto* file = static_cast<MemoryFile*>(user_data);
  if (file->error.empty()) {
    char message[512];
    std::vsnprintf(message, sizeof message, format, args);
    file->error = message;
  }
  return 1;  // handled: nothing reaches libtiff's global handler (stderr)
}

int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

// The largest single allocation libtiff may make for one file (a strip or tile buffer): more
// than an uncompressed 16384 x 16384 RGB strip, far less than a damaged header could ask for.
constexpr tmsize_t kMaxLibtiffAllocation = tmsize_t{1} << 30;

struct TiffCloser {
  void operator()(TIFF* tiff) const { TIFFClose(tiff); }
};
struct OptionsFreer {
  void operator()(TIFFOpenOptions* options) const { TIFFOpenOptionsFree(options); }
};

std::string reason(const MemoryFile& file, const char* fallback) {
  return file.error.empty() ? std::string(fallback) : file.error;
}

}  // namespace

RgbImage decode_tiff(std::span<const std::uint8_t> bytes) {
  MemoryFile file{bytes, 0, {}};
  const std::unique_ptr<TIFFOpenOptions, OptionsFreer> options(TIFFOpenOptionsAlloc());
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_error, &file);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_warning, &file);
  TIFFOpenOptionsSetMaxSingleMemAlloc(options.get(), kMaxLibtiffAllocation);
  const std::unique_ptr<TIFF, TiffCloser> tiff(
      TIFFClientOpenExt("source image", "r", &file, read_proc, write_proc, seek_proc, close_proc,
                        size_proc, map_proc, unmap_proc, options.get()));
  if (!tiff) throw EncodeError("libtiff cannot open it: " + reason(file, "not a TIFF file"));
  std::uint32_t width = 0, height = 0;
  TIFFGetField(tiff.get(), TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tiff.get(), TIFFTAG_IMAGELENGTH, &height);
  check_image_dimensions(width, height);
  char why[1024] = "";
  if (!TIFFRGBAImageOK(tiff.get(), why)) {
    throw EncodeError(std::string("libtiff cannot convert it to RGB: ") + why);
  }
  // Unassociated alpha would be multiplied into the colours by libtiff's RGBA interface; marking
  // the extra sample unspecified keeps the colours as stored, as for every other format.
  std::uint16_t extra_count = 0;
  std::uint16_t* extra_types = nullptr;
  if (TIFFGetField(tiff.get(), TIFFTAG_EXTRASAMPLES, &extra_count, &extra_types) &&
      extra_count == 1 && extra_types[0] == EXTRASAMPLE_UNASSALPHA) {
    std::uint16_t unspecified[1] = {EXTRASAMPLE_UNSPECIFIED};
    TIFFSetField(tiff.get(), TIFFTAG_EXTRASAMPLES, 1, unspecified);
  }
  const std::uint64_t pixels = std::uint64_t{width} * height;
  // Not value-initialised: pages libtiff never fills (a truncated file) are never touched.
  std::unique_ptr<std::uint32_t[]> raster(new std::uint32_t[pixels]);
  if (!TIFFReadRGBAImageOriented(tiff.get(), width, height, raster.get(), ORIENTATION_TOPLEFT, 1)) {
    throw EncodeError("libtiff cannot decode it: " + reason(file, "damaged image data"));
  }
  if (!file.error.empty()) throw EncodeError("libtiff cannot decode it: " + file.error);
  RgbImage image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.pixels.resize(image.byte_size());
  for (std::uint64_t i = 0; i < pixels; ++i) {
    image.pixels[3 * i] = static_cast<std::uint8_t>(TIFFGetR(raster[i]));
    image.pixels[3 * i + 1] = static_cast<std::uint8_t>(TIFFGetG(raster[i]));
    image.pixels[3 * i + 2] = static_cast<std::uint8_t>(TIFFGetB(raster[i]));
  }
  return image;
}

#else

RgbImage decode_tiff(std::span<const std::uint8_t>) {
  throw EncodeError("this build cannot read TIFF files (it was built without libtiff)");
}

#endif

}  // namespace ffcv::tools
