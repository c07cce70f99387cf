// random_resized_crop and center_crop: RGBImage decoders that output a fixed size, for datasets
// of any image sizes (FFCV's RandomResizedCropRGBImageDecoder and CenterCropRGBImageDecoder).
//
// Where FFCV decodes the whole JPEG and then area-resizes the crop, these decode only the crop
// window (libjpeg's cropped scanlines), at the smallest DCT scale M/8 that still gives at least
// the output size when `dct_scaling` is on, and resize the rest of the way with the separable
// resampler. Raw images are resized straight from the page. `interpolation` is `area` (FFCV's
// INTER_AREA, the default) or `linear`.
//
// Memory: declare() reads every sample's image size and sizes the scratch the loader gives each
// worker: the largest region a window decode of this field can produce (jpeg_window_bytes_bound
// per JPEG sample, which with DCT scaling depends on the output size) followed by the resize's
// scratch for the largest source; decode() uses only that scratch.
#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <tuple>

#include "crop_window_rule.hpp"
#include "ffcv/crop.hpp"
#include "ffcv/decoders.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_window.hpp"
#include "ffcv/image/resize.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

struct CropDecoderOptions {
  int out_height = 0, out_width = 0;
  Interpolation interpolation = Interpolation::kArea;
  bool dct_scaling = true;
  bool fast_dct = true;
};

// The parameters every crop decoder declares (builtin_steps.cpp).
CropDecoderOptions read_common(const OpParams& params, const std::string& name) {
  CropDecoderOptions options;
  std::tie(options.out_height, options.out_width) = crop_output_size(params, name);
  options.interpolation = parse_interpolation(params.require_string("interpolation"));
  options.dct_scaling = params.require_bool("dct_scaling");
  options.fast_dct = params.require_bool("fast_dct");
  return options;
}

// What the crop decoders share: their options, a resizable output size, the field check and
// the resize source of a window of a raw image.
class CropDecoderBase : public ResizableDecoder {
 public:
  explicit CropDecoderBase(CropDecoderOptions options) : options_(options) {}

  void set_output_size(int height, int width) override {
    check_crop_output_size(height, width, name());
    options_.out_height = height;
    options_.out_width = width;
  }
  int output_height() const override { return options_.out_height; }
  int output_width() const override { return options_.out_width; }
  // Known after declare(): see size_scratch.
  std::uint64_t scratch_bytes() const override { return region_bytes_ + resize_bytes_; }

 protected:
  // The output state with `views` leading views (0: none).
  TensorState declare_images(const Reader& reader, std::size_t field, int views) const {
    require_rgb_image_field(reader, field, name());
    TensorState state{DType::parse("|u1"),
                      {static_cast<std::uint64_t>(options_.out_height),
                       static_cast<std::uint64_t>(options_.out_width), 3}};
    if (views > 0) state.shape.insert(state.shape.begin(), static_cast<std::uint64_t>(views));
    return state;
  }

  // Sizes the scratch for the images of `field` (declare_images checked it is an RGBImage field):
  // the decoded JPEG region, padded to a cache line, then the resize's scratch. The window
  // decode asks for the output size on every request when `fixed_request_size`, so the region
  // bound may count on DCT scaling; otherwise (DCT scaling off, or sizes that vary per sample)
  // it covers the whole frame.
  void size_scratch(const Reader& reader, std::size_t field, bool fixed_request_size) {
    std::uint64_t region = 0;
    int widest = 0, tallest = 0;
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      const ImageMetadata image = ImageMetadata::load(reader.column(i, field));
      widest = std::max<int>(widest, image.width);
      tallest = std::max<int>(tallest, image.height);
      if (image.mode != StoredImageMode::kJpg) continue;
      region =
          std::max(region, fixed_request_size
                               ? jpeg_window_bytes_bound(image.width, image.height,
                                                         options_.out_width, options_.out_height)
                               : jpeg_window_bytes_bound(image.width, image.height, 0, 0));
    }
    region_bytes_ = (region + kCacheLine - 1) / kCacheLine * kCacheLine;
    resize_bytes_ =
        resize_rgb_scratch_bytes(widest, tallest, options_.out_width, options_.out_height);
  }

  // The decoded region's part of `scratch` (at least scratch_bytes() bytes) and the resize's
  // part.
  std::span<std::uint8_t> region_scratch(std::span<std::uint8_t> scratch) const {
    if (scratch.size() < scratch_bytes()) {
      throw Error(name() + ": the scratch holds " + std::to_string(scratch.size()) +
                  " bytes, fewer than the " + std::to_string(scratch_bytes()) + " it declared");
    }
    return scratch.first(region_bytes_);
  }
  std::span<std::uint8_t> resize_scratch(std::span<std::uint8_t> scratch) const {
    return scratch.subspan(region_bytes_);
  }

  CropDecoderOptions options_;

 private:
  static constexpr std::uint64_t kCacheLine = 64;
  std::uint64_t region_bytes_ = 0;  // set by size_scratch
  std::uint64_t resize_bytes_ = 0;
};

// random_resized_crop and center_crop: one window per sample, chosen by `rule`.
class ResizedCropDecoder final : public CropDecoderBase {
 public:
  ResizedCropDecoder(std::string name, CropDecoderOptions options, CropWindowRule rule)
      : CropDecoderBase(options), name_(std::move(name)), rule_(rule) {}
  std::string name() const override { return name_; }

  TensorState declare(const Reader& reader, std::size_t field) override {
    TensorState state = declare_images(reader, field, 0);
    size_scratch(reader, field, options_.dct_scaling);
    return state;
  }

  bool maps_geometry() const override { return true; }
  void map_geometry(const std::uint8_t* column, const SampleContext& context,
                    PlaneMaps& maps) const override {
    const ImageMetadata image = ImageMetadata::load(column);
    maps.push(crop_map(rule_.choose(image.height, image.width, context), options_.out_height,
                       options_.out_width));
  }

  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override {
    const std::span<std::uint8_t> decoded = region_scratch(scratch);
    const ImageMetadata image = ImageMetadata::load(column);
    const CropWindow window = rule_.choose(image.height, image.width, context);
    ResizeSource source;
    if (image.mode == StoredImageMode::kRaw) {
      source = raw_resize_source(image, payloads, window);
    } else {
      JpegWindowRequest request;
      request.frame_width = image.width;
      request.frame_height = image.height;
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
               resize_scratch(scratch));
  }

 private:
  std::string name_;
  CropWindowRule rule_;
};

// random_resized_crops: `views` random-resized crops of one image, decoded once. The JPEG is
// decoded over the union of the views' windows, at the smallest DCT scale that still gives
// every view at least the output size, and each view is resized from that one decode; raw
// images are resized straight from the page. View v draws its window from the sample's keyed
// numbers v*64, v*64+1, ... (a window takes at most 40), and with `flip` it is mirrored when
// draw v*64+63 is below 0.5. Output: uint8 [views, height, width, 3].
class MultiViewCropDecoder final : public CropDecoderBase {
 public:
  static constexpr std::uint32_t kDrawsPerView = 64;
  static constexpr int kMaxViews = 64;

  MultiViewCropDecoder(CropDecoderOptions options, int views, std::array<double, 2> scale,
                       std::array<double, 2> ratio, bool flip)
      : CropDecoderBase(options),
        views_(views),
        rule_(CropWindowRule::random(scale, ratio, "random_resized_crops")),
        flip_(flip) {
    if (views_ < 1 || views_ > kMaxViews) {
      throw ConfigError("random_resized_crops: views must be 1.." + std::to_string(kMaxViews));
    }
  }
  std::string name() const override { return "random_resized_crops"; }
  TensorState declare(const Reader& reader, std::size_t field) override {
    TensorState state = declare_images(reader, field, views_);
    // The union window's decode asks for a size that depends on the views' windows.
    size_scratch(reader, field, false);
    return state;
  }

  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override {
    const std::span<std::uint8_t> decoded = region_scratch(scratch);
    std::array<CropWindow, kMaxViews> windows;
    const ImageMetadata image = ImageMetadata::load(column);
    DecodedWindow region;  // the union window's decode (JPEG samples)
    int left = image.width, top = image.height, right = 0, bottom = 0;
    int narrowest = image.width, lowest = image.height;
    for (int v = 0; v < views_; ++v) {
      const CropWindow w = rule_.choose(image.height, image.width, context,
                                        static_cast<std::uint32_t>(v) * kDrawsPerView);
      windows[static_cast<std::size_t>(v)] = w;
      left = std::min(left, w.left);
      top = std::min(top, w.top);
      right = std::max(right, w.left + w.width);
      bottom = std::max(bottom, w.top + w.height);
      narrowest = std::min(narrowest, w.width);
      lowest = std::min(lowest, w.height);
    }
    const std::size_t view_bytes = std::size_t(options_.out_height) * options_.out_width * 3;
    for (int v = 0; v < views_; ++v) {
      const CropWindow& w = windows[static_cast<std::size_t>(v)];
      ResizeSource source;
      if (image.mode == StoredImageMode::kRaw) {
        source = raw_resize_source(image, payloads, w);
      } else {
        if (v == 0) {
          region =
              decode_union(payloads, image, top, left, bottom, right, narrowest, lowest, decoded);
        }
        const double sx = region.crop_w / (right - left), sy = region.crop_h / (bottom - top);
        source = {decoded.data(),
                  region.width,
                  region.height,
                  std::size_t(region.width) * 3,
                  region.crop_x + (w.left - left) * sx,
                  region.crop_y + (w.top - top) * sy,
                  w.width * sx,
                  w.height * sy};
      }
      std::uint8_t* target = out + std::size_t(v) * view_bytes;
      resize_rgb(source, target, options_.out_width, options_.out_height, options_.interpolation,
                 resize_scratch(scratch));
      if (flip_ && context.uniform(std::uint32_t(v) * kDrawsPerView + kDrawsPerView - 1) < 0.5) {
        mirror_rgb_rows(target, options_.out_height, options_.out_width);
      }
    }
  }

 private:
  // Decodes the union window once, at a scale that leaves every view at least the output size.
  DecodedWindow decode_union(const PayloadReader& payloads, const ImageMetadata& image, int top,
                             int left, int bottom, int right, int narrowest, int lowest,
                             std::span<std::uint8_t> decoded) const {
    JpegWindowRequest request;
    request.frame_width = image.width;
    request.frame_height = image.height;
    request.top = top;
    request.left = left;
    request.height = bottom - top;
    request.width = right - left;
    const auto needed = [](int out, int span, int smallest) {
      return static_cast<int>(
          std::min<double>(span, std::ceil(double(out) * span / std::max(1, smallest))));
    };
    request.min_out_width =
        options_.dct_scaling ? needed(options_.out_width, request.width, narrowest) : request.width;
    request.min_out_height =
        options_.dct_scaling ? needed(options_.out_height, request.height, lowest) : request.height;
    request.fast_dct = options_.fast_dct;
    return decode_jpeg_window(payloads.payload(image.data_ptr), request, decoded);
  }

  int views_;
  CropWindowRule rule_;
  bool flip_;
};

}  // namespace

std::shared_ptr<Decoder> make_random_resized_crop(const OpParams& params) {
  const CropDecoderOptions options = read_common(params, "random_resized_crop");
  return std::make_shared<ResizedCropDecoder>(
      "random_resized_crop", options,
      CropWindowRule::random(number_pair(params, "scale"), number_pair(params, "ratio"),
                             "random_resized_crop"));
}

std::shared_ptr<Decoder> make_random_resized_crops(const OpParams& params) {
  const CropDecoderOptions options = read_common(params, "random_resized_crops");
  return std::make_shared<MultiViewCropDecoder>(
      options, static_cast<int>(params.require_int("views")), number_pair(params, "scale"),
      number_pair(params, "ratio"), params.require_bool("flip"));
}

std::shared_ptr<Decoder> make_center_crop(const OpParams& params) {
  const CropDecoderOptions options = read_common(params, "center_crop");
  return std::make_shared<ResizedCropDecoder>(
      "center_crop", options, CropWindowRule::centered(params.require_double("ratio")));
}

}  // namespace ffcv
