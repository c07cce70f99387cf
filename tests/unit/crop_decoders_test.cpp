// random_resized_crop and center_crop decoders through the loader, against a reference built
// from independent parts: a full decode, the same crop window, OpenCV's INTER_AREA resize.
#include <catch2/catch.hpp>

#include <opencv2/imgproc.hpp>

#include "ffcv/crop.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
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

// The context the loader gives the decoder of its first pipeline for `index`.
SampleContext decoder_context(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
  SampleContext context;
  context.epoch = epoch;
  context.index = index;
  context.stream = 0;
  context.epoch_key = SampleContext::make_epoch_key(seed, epoch);
  return context;
}

void check_close(const RgbImage& got, const RgbImage& expected, double min_psnr, int max_abs_diff) {
  CHECK(test::psnr(got, expected) >= min_psnr);
  int worst = 0;
  for (std::size_t i = 0; i < got.pixels.size(); ++i) {
    worst = std::max(worst, std::abs(int(got.pixels[i]) - int(expected.pixels[i])));
  }
  CHECK(worst <= max_abs_diff);
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
      const SampleContext context = decoder_context(4, 1, index);
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
      check_close(got, expected, min_psnr, max_abs_diff);
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

namespace {

// Every view of random_resized_crops against OpenCV's area resize of its window in the whole
// stored image; with `flip`, the reference is mirrored when the view's flip draw says so.
void compare_views(const std::string& path, bool flip, double min_psnr, int max_abs_diff) {
  constexpr int kViews = 3, kSize = 48;
  LoaderOptions options;
  options.batch_size = 8;
  options.order.seed = 9;
  const OpParams params({{"size", std::int64_t{kSize}},
                         {"views", std::int64_t{kViews}},
                         {"scale", std::vector<double>{0.2, 1.0}},
                         {"flip", flip}});
  Loader loader(
      path,
      {{"image", "image", OpRegistry::global().make_decoder("random_resized_crops", params), {}}},
      options);
  REQUIRE(loader.outputs()[0].second.shape == std::vector<std::uint64_t>{kViews, kSize, kSize, 3});
  const Reader& reader = loader.reader();
  auto it = loader.epoch(2);
  int flipped = 0, views_seen = 0;
  while (auto batch = it.next()) {
    const BatchTensor images = batch->output("image");
    for (std::uint64_t k = 0; k < batch->size(); ++k) {
      const std::uint64_t index = batch->indices()[k];
      const RgbImage stored = std::get<RgbImage>(reader.decode(index, 0));
      const SampleContext context = decoder_context(9, 2, index);
      for (int v = 0; v < kViews; ++v) {
        const std::uint32_t base = static_cast<std::uint32_t>(v) * 64;
        const CropWindow window =
            random_resized_crop(stored.height, stored.width, {0.2, 1.0}, {0.75, 4.0 / 3.0},
                                [&](std::uint32_t n) { return context.uniform(base + n); });
        RgbImage expected = reference_crop(stored, window, kSize);
        if (flip && context.uniform(base + 63) < 0.5) {
          ++flipped;
          for (int y = 0; y < kSize; ++y) {
            for (int x = 0; x < kSize / 2; ++x) {
              for (int c = 0; c < 3; ++c) {
                std::swap(expected.pixels[(y * kSize + x) * 3 + c],
                          expected.pixels[(y * kSize + kSize - 1 - x) * 3 + c]);
              }
            }
          }
        }
        const std::uint8_t* view = images.data + (k * kViews + v) * kSize * kSize * 3;
        const RgbImage got{kSize, kSize, std::vector<std::uint8_t>(view, view + kSize * kSize * 3)};
        INFO("sample " << index << " view " << v);
        check_close(got, expected, min_psnr, max_abs_diff);
        ++views_seen;
      }
    }
  }
  CHECK(views_seen == 40 * kViews);
  if (flip) {
    CHECK(flipped > 20);  // about half of 120
    CHECK(flipped < 100);
  }
}

}  // namespace

TEST_CASE("multi-view crops: one decode, every view equals its own crop of the image",
          "[crop][loader]") {
  test::TempDir dir;
  // Raw: the same windows and filter as OpenCV, so only rounding differs.
  compare_views(write_images(dir, ImageWriteMode::kRaw), false, 45.0, 1);
  compare_views(write_images(dir, ImageWriteMode::kRaw), true, 45.0, 1);
  // JPEG: the union of the windows is decoded once at a reduced DCT scale (see the
  // single-view test for the 30 dB bound).
  compare_views(write_images(dir, ImageWriteMode::kJpg), true, 30.0, 40);
  CHECK_THROWS_AS(OpRegistry::global().make_decoder(
                      "random_resized_crops",
                      OpParams({{"size", std::int64_t{8}}, {"views", std::int64_t{0}}})),
                  ConfigError);
}
