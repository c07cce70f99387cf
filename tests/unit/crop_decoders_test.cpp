// random_resized_crop and center_crop decoders through the loader, against a reference built
// from independent parts: a full decode, the same crop window, OpenCV's INTER_AREA resize.
#include <catch2/catch.hpp>

#include <opencv2/imgproc.hpp>

#include "ffcv/crop.hpp"
#include "ffcv/errors.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/jpeg_codec.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/op_registry.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

RgbImage sample_image(std::uint64_t i) {
  return test::gradient_image(180 + static_cast<int>(i % 7) * 37,
                              140 + static_cast<int>(i % 5) * 29, i);
}

std::string write_images(const test::TempDir& dir, ImageWriteMode mode) {
  const std::string path = dir.file(mode == ImageWriteMode::kRaw ? "raw.beton" : "jpg.beton");
  RgbImageOptions options;
  options.write_mode = mode;
  options.jpeg_quality = 95;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(options)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(40, [](std::uint64_t i) {
        return std::vector<FieldValue>{sample_image(i), static_cast<std::int64_t>(i)};
      }));
  return path;
}

// Reference: the stored image decoded whole (accurate... the stored pixels for raw, TurboJPEG
// fast IDCT for JPEG as FFCV does), cropped to `window`, resized by OpenCV INTER_AREA.
RgbImage reference_crop(const RgbImage& stored, const CropWindow& window, int size) {
  RgbImage out{size, size, std::vector<std::uint8_t>(std::size_t(size) * size * 3)};
  const cv::Mat full(stored.height, stored.width, CV_8UC3,
                     const_cast<std::uint8_t*>(stored.pixels.data()));
  cv::Mat target(size, size, CV_8UC3, out.pixels.data());
  cv::resize(full(cv::Rect(window.left, window.top, window.width, window.height)), target,
             target.size(), 0, 0, cv::INTER_AREA);
  return out;
}

void compare_with_reference(const std::string& path, const std::string& decoder_name,
                            const OpParams& params, double min_psnr, int max_abs_diff) {
  LoaderOptions options;
  options.batch_size = 8;
  options.order.seed = 4;
  Loader loader(path,
                {{"image", "image", OpRegistry::global().make_decoder(decoder_name, params), {}}},
                options);
  const Reader& reader = loader.reader();
  auto it = loader.epoch(1);
  while (auto batch = it.next()) {
    const BatchTensor images = batch->output("image");
    for (std::uint64_t k = 0; k < batch->size(); ++k) {
      const std::uint64_t index = batch->indices()[k];
      const RgbImage stored = std::get<RgbImage>(reader.decode(index, 0));
      SampleContext context;
      context.epoch = 1;
      context.index = index;
      context.stream = 0;  // the decoder of the first pipeline
      context.epoch_key = SampleContext::make_epoch_key(4, 1);
      const CropWindow window =
          decoder_name == "center_crop"
              ? center_crop(stored.height, stored.width, params.get_double("ratio", 0.875))
              : random_resized_crop(stored.height, stored.width, {0.08, 1.0}, {0.75, 4.0 / 3.0},
                                    [&](std::uint32_t n) { return context.uniform(n); });
      const RgbImage expected = reference_crop(stored, window, 64);
      const RgbImage got{64, 64,
                         std::vector<std::uint8_t>(images.data + k * 64 * 64 * 3,
                                                   images.data + (k + 1) * 64 * 64 * 3)};
      INFO("sample " << index << " window " << window.left << "," << window.top << " "
                     << window.width << "x" << window.height);
      CHECK(test::psnr(got, expected) >= min_psnr);
      int worst = 0;
      for (std::size_t i = 0; i < got.pixels.size(); ++i) {
        worst = std::max(worst, std::abs(int(got.pixels[i]) - int(expected.pixels[i])));
      }
      CHECK(worst <= max_abs_diff);
    }
  }
}

}  // namespace

TEST_CASE("crop decoders on raw images match OpenCV's area resize of the same window",
          "[crop][loader]") {
  test::TempDir dir;
  const std::string path = write_images(dir, ImageWriteMode::kRaw);
  const OpParams params({{"size", std::int64_t{64}}});
  // Same window, same filter: only rounding differs.
  compare_with_reference(path, "random_resized_crop", params, 45.0, 1);
  compare_with_reference(path, "center_crop", params, 45.0, 1);
}

TEST_CASE("crop decoders on JPEG images: window decoding at reduced DCT scale stays close",
          "[crop][loader]") {
  // The reference decodes the whole JPEG at full scale; the decoder decodes the window at the
  // smallest DCT scale that still covers 64 px, then area-resizes. DCT-domain downscaling is a
  // different low-pass filter than box averaging, so pixels differ slightly; 30 dB on these
  // smooth gradients still fails any misplaced window (a one-pixel shift costs more).
  test::TempDir dir;
  const std::string path = write_images(dir, ImageWriteMode::kJpg);
  compare_with_reference(path, "random_resized_crop", OpParams({{"size", std::int64_t{64}}}), 30.0,
                         40);
  compare_with_reference(path, "center_crop", OpParams({{"size", std::int64_t{64}}}), 30.0, 40);
  // Without DCT scaling the window decode is the full decode's pixels: only resize rounding.
  compare_with_reference(path, "center_crop",
                         OpParams({{"size", std::int64_t{64}}, {"dct_scaling", false}}), 45.0, 1);
}

TEST_CASE("crop decoder parameters are checked", "[crop]") {
  CHECK_THROWS_WITH(OpRegistry::global().make_decoder("random_resized_crop", {}),
                    Catch::Contains("size"));
  CHECK_THROWS_AS(OpRegistry::global().make_decoder(
                      "random_resized_crop", OpParams({{"size", std::int64_t{8}},
                                                       {"scale", std::vector<double>{0.9, 0.1}}})),
                  ConfigError);
  CHECK_THROWS_AS(OpRegistry::global().make_decoder(
                      "center_crop", OpParams({{"size", std::int64_t{8}}, {"ratio", 1.5}})),
                  ConfigError);
  CHECK_THROWS_WITH(OpRegistry::global().make_decoder(
                        "center_crop", OpParams({{"size", std::int64_t{8}},
                                                 {"interpolation", std::string("cubic")}})),
                    Catch::Contains("cubic"));
}
