// MNIST-style IDX files (Fashion-MNIST as Debian's dataset-fashion-mnist ships it, gzipped).
//
// Images (IDX type 0x08, N x H x W unsigned bytes) become RGB images by repeating the gray
// channel; labels (N unsigned bytes) become Int values. Samples are (image, label).
#pragma once

#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"

namespace ffcv::tools {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

class IdxSource final : public SampleSource {
 public:
  // Reads both files whole (gzipped or not). Throws ConfigError naming the file when it is
  // missing, malformed, or when the counts differ.
  IdxSource(const std::string& images_path, const std::string& labels_path);
  // The train or test split of Fashion-MNIST in `dir` ("train" or "test").
  static IdxSource fashion_mnist(const std::string& dir, const std::string& split);

  std::uint64_t size() const override { return labels_.size(); }
  std::vector<FieldValue> load(std::uint64_t index) const override;
  std::string describe(std::uint64_t index) const override;

  int height() const { return height_; }
  int width() const { return width_; }

 private:
  std::string images_path_;
  int height_ = 0, width_ = 0;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::uint8_t> labels_;
};

// Reads a whole file, transparently gunzipping it. Throws ConfigError.
std::vector<std::uint8_t> read_maybe_gzipped(const std::string& path);

}  // namespace ffcv::tools
