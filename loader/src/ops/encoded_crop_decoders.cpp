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

#include "crop_window_rule.hpp"
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

class EncodedCropDecoder final : public ResizableDecoder {
 public:
  EncodedCropDecoder(std::string name, std::pair<int, int> out_size, Interpolation interpolation,
                     double flip, CropWindowRule rule)
      : name_(std::move(name)),
        out_height_(out_size.first),
        out_width_(out_size.second),
        interpolation_(interpolation),
        flip_(flip),
        rule_(rule) {
    if (flip_ < 0 || flip_ > 1) throw ConfigError(name_ + ": flip must be within [0, 1]");
  }
  std::string name() const override { return name_; }

  void set_output_size(int height, int width) override {
    check_crop_output_size(height, width, name());
    out_height_ = height;
    out_width_ = width;
  }
  int output_height() const override { return out_height_; }
  int output_width() const override { return out_width_; }
  std::uint64_t scratch_bytes() const override { return resize_bytes_; }

  TensorState declare(const Reader& reader, std::size_t field) override {
    require_rgb_image_field(reader, field, name());
    std::uint64_t largest_jpeg = 0;
    int widest = 0, tallest = 0;
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      const ImageMetadata image = ImageMetadata::load(reader.column(i, field));
      widest = std::max<int>(widest, image.width);
      tallest = std::max<int>(tallest, image.height);
      if (image.mode != StoredImageMode::kJpg) continue;
      const AllocEntry* allocation = reader.find_allocation(image.data_ptr);
      if (allocation == nullptr) {
        throw FormatError(reader.path(),
                          "sample " + std::to_string(i) + "'s image points at no allocation");
      }
      largest_jpeg = std::max(largest_jpeg, allocation->size);
    }
    const std::uint64_t pixels = std::uint64_t(out_height_) * out_width_ * 3;
    const std::uint64_t record = kEncodedCropHeaderBytes + std::max(largest_jpeg, pixels);
    record_bytes_ = (record + 63) / 64 * 64;
    resize_bytes_ = resize_rgb_scratch_bytes(widest, tallest, out_width_, out_height_);
    return {DType::parse("|u1"), {record_bytes_}};
  }

  // The crop and its resize, then the mirror when the sample is flipped: where the GPU's image
  // of the record puts the stored image's points.
  bool maps_geometry() const override { return true; }
  void map_geometry(const std::uint8_t* column, const SampleContext& context,
                    PlaneMaps& maps) const override {
    const ImageMetadata image = ImageMetadata::load(column);
    maps.push(crop_map(rule_.choose(image.height, image.width, context), out_height_, out_width_));
    if (flipped(context)) maps.push(PlaneMap::mirror(out_width_, out_height_));
  }

  void decode(const std::uint8_t* column, const PayloadReader& payloads, std::uint8_t* out,
              std::span<std::uint8_t> scratch, const SampleContext& context) const override {
    const ImageMetadata image = ImageMetadata::load(column);
    EncodedCropHeader header;
    header.out_height = out_height_;
    header.out_width = out_width_;
    header.frame_height = image.height;
    header.frame_width = image.width;
    header.window = rule_.choose(image.height, image.width, context);
    header.flip = flipped(context);
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
      if (kEncodedCropHeaderBytes + header.payload_bytes > record_bytes_) {
        throw Error(name() +
                    ": the output size changed after declare(); call set_output_size "
                    "between epochs");
      }
      resize_rgb(raw_resize_source(image, payloads, header.window), payload, out_width_,
                 out_height_, interpolation_, scratch);
      if (header.flip) mirror_rgb_rows(payload, out_height_, out_width_);
    }
    header.store(out);
    // The rest of the record is zeros, so that batches are the same bytes for any thread count.
    const std::uint64_t used = kEncodedCropHeaderBytes + header.payload_bytes;
    std::memset(out + used, 0, record_bytes_ - used);
  }

 private:
  // Whether the sample is mirrored: the draw random_horizontal_flip would make as the next step
  // of the pipeline.
  bool flipped(const SampleContext& context) const {
    SampleContext flip_context = context;
    flip_context.stream = context.stream + 1;
    return flip_ > 0 && flip_context.uniform(0) < flip_;
  }

  std::string name_;
  int out_height_, out_width_;
  Interpolation interpolation_;
  double flip_;
  CropWindowRule rule_;
  std::uint64_t record_bytes_ = 0;  // set by declare()
  std::uint64_t resize_bytes_ = 0;
};

}  // namespace

std::shared_ptr<Decoder> make_random_resized_crop_encoded(const OpParams& params) {
  const std::string name = "random_resized_crop_encoded";
  return std::make_shared<EncodedCropDecoder>(
      name, crop_output_size(params, name),
      parse_interpolation(params.require_string("interpolation")), params.require_double("flip"),
      CropWindowRule::random(number_pair(params, "scale"), number_pair(params, "ratio"),
                             "random_resized_crop_encoded"));
}

std::shared_ptr<Decoder> make_center_crop_encoded(const OpParams& params) {
  const std::string name = "center_crop_encoded";
  return std::make_shared<EncodedCropDecoder>(
      name, crop_output_size(params, name),
      parse_interpolation(params.require_string("interpolation")), params.require_double("flip"),
      CropWindowRule::centered(params.require_double("ratio")));
}

}  // namespace ffcv
