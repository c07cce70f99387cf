#include "idx_source.hpp"

#include <zlib.h>

#include "ffcv/util/errors.hpp"

namespace ffcv::tools {
namespace {

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

// Parses an IDX header of unsigned bytes with `dims` dimensions; returns the dimensions. The
// byte count is computed in checked arithmetic: three 32-bit dimensions can exceed 64 bits.
std::vector<std::uint32_t> idx_dims(const std::vector<std::uint8_t>& data, int dims,
                                    const std::string& path) {
  if (data.size() < 4 + 4u * dims || data[0] != 0 || data[1] != 0 || data[2] != 0x08 ||
      data[3] != dims) {
    throw ConfigError("'" + path + "' is not an IDX file of unsigned bytes with " +
                      std::to_string(dims) + " dimensions");
  }
  std::vector<std::uint32_t> shape;
  std::uint64_t count = 1;
  bool fits = true;
  for (int d = 0; d < dims; ++d) {
    shape.push_back(big_endian_u32(&data[4 + 4 * d]));
    fits = fits && !__builtin_mul_overflow(count, std::uint64_t{shape.back()}, &count);
  }
  std::uint64_t total = 0;
  fits = fits && !__builtin_add_overflow(count, 4 + 4u * static_cast<std::uint64_t>(dims), &total);
  if (!fits || data.size() != total) {
    const std::string promised = fits ? std::to_string(total) : "more than 2^64";
    throw ConfigError("'" + path + "' holds " + std::to_string(data.size()) +
                      " bytes, its header promises " + promised);
  }
  return shape;
}

}  // namespace

std::vector<std::uint8_t> read_maybe_gzipped(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw ConfigError("cannot open '" + path + "'");
  std::vector<std::uint8_t> data;
  std::uint8_t buffer[1 << 16];
  for (;;) {
    const int got = gzread(file, buffer, sizeof buffer);
    if (got < 0) {
      gzclose(file);
      throw ConfigError("'" + path + "' is corrupt (gzip error)");
    }
    if (got == 0) break;
    data.insert(data.end(), buffer, buffer + got);
  }
  gzclose(file);
  return data;
}

IdxSource::IdxSource(const std::string& images_path, const std::string& labels_path)
    : images_path_(images_path) {
  pixels_ = read_maybe_gzipped(images_path);
  const auto image_shape = idx_dims(pixels_, 3, images_path);
  labels_ = read_maybe_gzipped(labels_path);
  const auto label_shape = idx_dims(labels_, 1, labels_path);
  if (image_shape[0] != label_shape[0]) {
    throw ConfigError("'" + images_path + "' has " + std::to_string(image_shape[0]) +
                      " images but '" + labels_path + "' has " + std::to_string(label_shape[0]) +
                      " labels");
  }
  // Image sides as a .beton stores them (16 bits); a zero side is no image.
  for (const std::uint32_t side : {image_shape[1], image_shape[2]}) {
    if (side == 0 || side > 65535) {
      throw ConfigError("'" + images_path + "' holds images of " + std::to_string(image_shape[1]) +
                        "x" + std::to_string(image_shape[2]) +
                        " pixels; each side must be 1 to 65535");
    }
  }
  height_ = static_cast<int>(image_shape[1]);
  width_ = static_cast<int>(image_shape[2]);
  pixels_.erase(pixels_.begin(), pixels_.begin() + 16);
  labels_.erase(labels_.begin(), labels_.begin() + 8);
}

IdxSource IdxSource::fashion_mnist(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "test") {
    throw ConfigError("Fashion-MNIST split must be 'train' or 'test', got '" + split + "'");
  }
  const std::string prefix = dir + "/" + (split == "train" ? "train" : "t10k");
  return IdxSource(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz");
}

std::vector<FieldValue> IdxSource::load(std::uint64_t index) const {
  RgbImage image;
  image.width = width_;
  image.height = height_;
  image.pixels.resize(image.byte_size());
  const std::uint8_t* gray = pixels_.data() + index * static_cast<std::uint64_t>(width_) * height_;
  for (std::size_t p = 0; p < static_cast<std::size_t>(width_) * height_; ++p) {
    image.pixels[3 * p] = image.pixels[3 * p + 1] = image.pixels[3 * p + 2] = gray[p];
  }
  return {std::move(image), std::int64_t{labels_[index]}};
}

std::string IdxSource::describe(std::uint64_t index) const {
  return images_path_ + " image " + std::to_string(index);
}

}  // namespace ffcv::tools
