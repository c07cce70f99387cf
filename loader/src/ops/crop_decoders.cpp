// random_resized_crop and center_crop: RGBImage decoders that output a fixed size, for datasets
// of any image sizes (FFCV's RandomResizedCropRGBImageDecoder and CenterCropRGBImageDecoder).
//
// Where FFCV decodes the whole JPEG and then area-resizes the crop, these decode only the crop
// window (libjpeg's cropped scanlines), at the smallest DCT scale M/8 that still gives at least
// the output size when `dct_scaling` is on, and resize the rest of the way with the separable
// resampler. Raw images are resized straight from the page. `interpolation` is `area` (FFCV's
// INTER_AREA, the default) or `linear`.
#include <array>
#include <cmath>

#include "ffcv/crop.hpp"
#include "ffcv/decoders.hpp"
#include "ffcv/errors.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/jpeg_window.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/resize.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

struct CropDecoderOptions {
  int out_height = 0, out_width = 0;
  Interpolation interpolation = Interpolation::kArea;
  bool dct_scaling = true;
  bool fast_dct = true;
};

void check_output_size(std::int64_t height, std::int64_t width, const std::string& name) {
  if (height < 1 || width < 1 || height > 65535 || width > 65535) {
    throw ConfigError(name + ": give the output `size` (or `height` and `width`), 1..65535");
  }
}

CropDecoderOptions read_common(const OpParams& params, const std::string& name) {
  CropDecoderOptions options;
  const std::int64_t size = params.get_int("size", 0);
  const std::int64_t height = params.get_int("height", size);
  const std::int64_t width = params.get_int("width", size);
  check_output_size(height, width, name);
  options.out_height = static_cast<int>(height);
  options.out_width = static_cast<int>(width);
  options.interpolation = parse_interpolation(params.get_string("interpolation", "area"));
  options.dct_scaling = params.get_bool("dct_scaling", true);
  options.fast_dct = params.get_bool("fast_dct", true);
  return options;
}

class ResizedCropDecoder : public ResizableDecoder {
 public:
  explicit ResizedCropDecoder(CropDecoderOptions options) : options_(options) {}

  void set_output_size(int height, int width) override {
    check_output_size(height, width, name());
    options_.out_height = height;
    options_.out_width = width;
  }
  int output_height() const override { return options_.out_height; }
  int output_width() const override { return options_.out_width; }

  TensorState declare(const Reader& reader, std::size_t field) override {
    if (dynamic_cast<const RgbImageField*>(reader.fields().at(field).field.get()) == nullptr) {
      throw ConfigError(name() + " decoder needs an RGBImage field, '" +
                        reader.fields()[field].name + "' is " +
                        reader.fields()[field].field->type_name());
    }
    return {DType::parse("|u1"),
            {static_cast<std::uint64_t>(options_.out_height),
             static_cast<std::uint64_t>(options_.out_width), 3}};
  }

  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t>, const SampleContext& context) const override {
    thread_local std::vector<std::uint8_t> decoded;
    thread_local std::vector<std::uint8_t> resize_scratch;
    const ImageMetadata image = ImageMetadata::load(column);
    const CropWindow window = choose_window(image.height, image.width, context);
    ResizeSource source;
    if (image.mode == StoredImageMode::kRaw) {
      const std::uint64_t bytes = std::uint64_t{image.width} * image.height * 3;
      source = {payloads.payload(image.data_ptr, bytes).data(),
                image.width,
                image.height,
                std::size_t{image.width} * 3,
                double(window.left),
                double(window.top),
                double(window.width),
                double(window.height)};
    } else {
      JpegWindowRequest request;
      request.top = window.top;
      request.left = window.left;
      request.height = window.height;
      request.width = window.width;
      request.min_out_width = options_.dct_scaling ? options_.out_width : window.width;
      request.min_out_height = options_.dct_scaling ? options_.out_height : window.height;
      request.fast_dct = options_.fast_dct;
      const DecodedWindow result =
          decode_jpeg_window(payloads.payload(image.data_ptr), request, decoded);
      source = {decoded.data(), result.width,  result.height, std::size_t(result.width) * 3,
                result.crop_x,  result.crop_y, result.crop_w, result.crop_h};
    }
    resize_rgb(source, out, options_.out_width, options_.out_height, options_.interpolation,
               resize_scratch);
  }

 protected:
  virtual CropWindow choose_window(int height, int width, const SampleContext& context) const = 0;
  CropDecoderOptions options_;
};

class RandomResizedCropDecoder final : public ResizedCropDecoder {
 public:
  RandomResizedCropDecoder(CropDecoderOptions options, std::array<double, 2> scale,
                           std::array<double, 2> ratio)
      : ResizedCropDecoder(options), scale_(scale), ratio_(ratio) {
    validate_random_crop_params(scale_, ratio_, "random_resized_crop");
  }
  std::string name() const override { return "random_resized_crop"; }

 protected:
  CropWindow choose_window(int height, int width, const SampleContext& context) const override {
    return random_resized_crop(height, width, scale_, ratio_,
                               [&](std::uint32_t n) { return context.uniform(n); });
  }

 private:
  std::array<double, 2> scale_, ratio_;
};

class CenterCropDecoder final : public ResizedCropDecoder {
 public:
  CenterCropDecoder(CropDecoderOptions options, double ratio)
      : ResizedCropDecoder(options), ratio_(ratio) {
    center_crop(1000, 1000, ratio_);  // validates the ratio
  }
  std::string name() const override { return "center_crop"; }

 protected:
  CropWindow choose_window(int height, int width, const SampleContext&) const override {
    return center_crop(height, width, ratio_);
  }

 private:
  double ratio_;
};

std::array<double, 2> pair(const OpParams& params, const std::string& key,
                           std::array<double, 2> fallback) {
  const std::vector<double> values = params.get_list(key, {fallback[0], fallback[1]});
  if (values.size() != 2) throw ConfigError("parameter '" + key + "' needs two numbers");
  return {values[0], values[1]};
}

}  // namespace

std::shared_ptr<Decoder> make_random_resized_crop(const OpParams& params) {
  const CropDecoderOptions options = read_common(params, "random_resized_crop");
  return std::make_shared<RandomResizedCropDecoder>(options, pair(params, "scale", {0.08, 1.0}),
                                                    pair(params, "ratio", {3.0 / 4.0, 4.0 / 3.0}));
}

std::shared_ptr<Decoder> make_center_crop(const OpParams& params) {
  const CropDecoderOptions options = read_common(params, "center_crop");
  return std::make_shared<CenterCropDecoder>(options, params.get_double("ratio", 224.0 / 256.0));
}

}  // namespace ffcv
