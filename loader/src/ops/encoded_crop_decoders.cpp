// random_resized_crop_encoded and center_crop_encoded: the CPU half of the GPU image path
// (ffcv/image/encoded_crop.hpp). Each sample's window comes from the same keyed draws as
// random_resized_crop / center_crop, its flip from the draw a random_horizontal_flip right after
// the crop would make (stream + 1, draw 0), so the same seed gives the same windows and flips on
// either path. JPEG samples keep their bytes; raw samples are resized (and flipped) here.
//
// The record's size is fixed before the epoch: the header, then room for the largest JPEG of the
// field or the output's pixels, whichever is larger, rounded up to 64 bytes.
#include <algorithm>
#include <array>
#include <cstring>

#include "ffcv/decoders.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/encoded_crop.hpp"
#include "ffcv/image/jpeg_coding.hpp"
#include "ffcv/image/resize.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

class EncodedCropDecoder : public ResizableDecoder {
 public:
  EncodedCropDecoder(int out_height, int out_width, Interpolation interpolation, double flip)
      : out_height_(out_height), out_width_(out_width), interpolation_(interpolation),
        flip_(flip) {
    if (flip_ < 0 || flip_ > 1) throw ConfigError("encoded crop: flip must be within [0, 1]");
  }

  void set_output_size(int height, int width) override {
    if (height < 1 || width < 1 || height > 65535 || width > 65535) {
      throw ConfigError(name() + ": output sides must be 1..65535");
    }
    out_height_ = height;
    out_width_ = width;
  }
  int output_height() const override { return out_height_; }
  int output_width() const override { return out_width_; }
  std::uint64_t scratch_bytes() const override { return resize_bytes_; }

  TensorState declare(const Reader& reader, std::size_t field) override {
    if (dynamic_cast<const RgbImageField*>(reader.fields().at(field).field.get()) == nullptr) {
      throw ConfigError(name() + " decoder needs an RGBImage field, '" +
                        reader.fields()[field].name + "' is " +
                        reader.fields()[field].field->type_name());
    }
    std::uint64_t largest_jpeg = 0;
    int widest = 0, tallest = 0;
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      const ImageMetadata image = ImageMetadata::load(reader.column(i, field));
      widest = std::max<int>(widest, image.width);
      tallest = std::max<int>(tallest, image.height);
      if (image.mode != StoredImageMode::kJpg) continue;
      const AllocEntry* allocation = reader.find_allocation(image.data_ptr);
      if (allocation == nullptr) {
        throw FormatError(reader.path(), "sample " + std::to_string(i) + "'s image points at no allocation");
      }
      largest_jpeg = std::max(largest_jpeg, allocation->size);
    }
    const std::uint64_t pixels = std::uint64_t(out_height_) * out_width_ * 3;
    const std::uint64_t record = kEncodedCropHeaderBytes + std::max(largest_jpeg, pixels);
    record_bytes_ = (record + 63) / 64 * 64;
    resize_bytes_ = resize_rgb_scratch_bytes(widest, tallest, out_width_, out_height_);
    return {DType::parse("|u1"), {record_bytes_}};
  }

  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override {
    const ImageMetadata image = ImageMetadata::load(column);
    EncodedCropHeader header;
    header.out_height = out_height_;
    header.out_width = out_width_;
    header.frame_height = image.height;
    header.frame_width = image.width;
    header.window = choose_window(image.height, image.width, context);
    // The draw random_horizontal_flip would make as the next step of the pipeline.
    SampleContext flip_context = context;
    flip_context.stream = context.stream + 1;
    header.flip = flip_ > 0 && flip_context.uniform(0) < flip_;
    header.sample = context.index;
    std::uint8_t* payload = out + kEncodedCropHeaderBytes;
    if (image.mode == StoredImageMode::kJpg) {
      const std::span<const std::uint8_t> jpeg = payloads.payload(image.data_ptr);
      const JpegCoding coding = read_jpeg_coding(jpeg);
      if (coding.width != image.width || coding.height != image.height) {
        throw Error("JPEG frame of " + std::to_string(coding.width) + " x " +
                          std::to_string(coding.height) + " under metadata of " +
                          std::to_string(image.width) + " x " + std::to_string(image.height));
      }
      header.kind = EncodedCropKind::kJpeg;
      header.components = coding.components;
      header.hardware_ok = !coding.progressive && !coding.arithmetic && coding.precision == 8 &&
                           coding.components == 3;
      header.payload_bytes = jpeg.size();
      if (kEncodedCropHeaderBytes + jpeg.size() > record_bytes_) {
        throw Error(name() + ": a JPEG of " + std::to_string(jpeg.size()) +
                    " bytes does not fit the record sized at declare()");
      }
      std::memcpy(payload, jpeg.data(), jpeg.size());
    } else {
      header.kind = EncodedCropKind::kPixels;
      header.payload_bytes = std::uint64_t(out_height_) * out_width_ * 3;
      const std::uint64_t bytes = std::uint64_t{image.width} * image.height * 3;
      const CropWindow& w = header.window;
      const ResizeSource source{payloads.payload(image.data_ptr, bytes).data(),
                                image.width,
                                image.height,
                                std::size_t{image.width} * 3,
                                double(w.left),
                                double(w.top),
                                double(w.width),
                                double(w.height)};
      resize_rgb(source, payload, out_width_, out_height_, interpolation_, scratch);
      if (header.flip) mirror_rows(payload);
    }
    header.store(out);
  }

 protected:
  virtual CropWindow choose_window(int height, int width, const SampleContext& context) const = 0;

 private:
  void mirror_rows(std::uint8_t* pixels) const {
    for (int y = 0; y < out_height_; ++y) {
      std::uint8_t* row = pixels + std::size_t(y) * out_width_ * 3;
      for (int a = 0, b = out_width_ - 1; a < b; ++a, --b) {
        for (int c = 0; c < 3; ++c) std::swap(row[a * 3 + c], row[b * 3 + c]);
      }
    }
  }

  int out_height_, out_width_;
  Interpolation interpolation_;
  double flip_;
  std::uint64_t record_bytes_ = 0;  // set by declare()
  std::uint64_t resize_bytes_ = 0;
};

class RandomResizedCropEncoded final : public EncodedCropDecoder {
 public:
  RandomResizedCropEncoded(int height, int width, Interpolation interpolation, double flip,
                           std::array<double, 2> scale, std::array<double, 2> ratio)
      : EncodedCropDecoder(height, width, interpolation, flip), scale_(scale), ratio_(ratio) {
    validate_random_crop_params(scale_, ratio_, "random_resized_crop_encoded");
  }
  std::string name() const override { return "random_resized_crop_encoded"; }

 protected:
  CropWindow choose_window(int height, int width, const SampleContext& context) const override {
    return random_resized_crop(height, width, scale_, ratio_,
                               [&](std::uint32_t n) { return context.uniform(n); });
  }

 private:
  std::array<double, 2> scale_, ratio_;
};

class CenterCropEncoded final : public EncodedCropDecoder {
 public:
  CenterCropEncoded(int height, int width, Interpolation interpolation, double flip, double ratio)
      : EncodedCropDecoder(height, width, interpolation, flip), ratio_(ratio) {
    center_crop(1000, 1000, ratio_);  // validates the ratio
  }
  std::string name() const override { return "center_crop_encoded"; }

 protected:
  CropWindow choose_window(int height, int width, const SampleContext&) const override {
    return center_crop(height, width, ratio_);
  }

 private:
  double ratio_;
};

struct OutputSize {
  int height, width;
};

OutputSize output_size(const OpParams& params, const std::string& name) {
  const std::int64_t size = params.get_int("size", 0);
  const std::int64_t height = params.get_int("height", size);
  const std::int64_t width = params.get_int("width", size);
  if (height < 1 || width < 1 || height > 65535 || width > 65535) {
    throw ConfigError(name + ": give the output `size` (or `height` and `width`), 1..65535");
  }
  return {static_cast<int>(height), static_cast<int>(width)};
}

std::array<double, 2> number_pair(const OpParams& params, const std::string& key) {
  const std::vector<double> values = params.require_list(key);
  if (values.size() != 2) throw ConfigError("parameter '" + key + "' needs two numbers");
  return {values[0], values[1]};
}

}  // namespace

std::shared_ptr<Decoder> make_random_resized_crop_encoded(const OpParams& params) {
  const OutputSize size = output_size(params, "random_resized_crop_encoded");
  return std::make_shared<RandomResizedCropEncoded>(
      size.height, size.width, parse_interpolation(params.require_string("interpolation")),
      params.require_double("flip"), number_pair(params, "scale"), number_pair(params, "ratio"));
}

std::shared_ptr<Decoder> make_center_crop_encoded(const OpParams& params) {
  const OutputSize size = output_size(params, "center_crop_encoded");
  return std::make_shared<CenterCropEncoded>(
      size.height, size.width, parse_interpolation(params.require_string("interpolation")),
      params.require_double("flip"), params.require_double("ratio"));
}

}  // namespace ffcv
