// Every field type and image write mode, written by DatasetWriter and read back by Reader.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include <opencv2/imgproc.hpp>

#include "ffcv/field_registry.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::FunctionSource;
using test::TempDir;

namespace {

NdArray make_array(const DType& dtype, std::vector<std::uint64_t> shape, std::uint64_t seed) {
  NdArray array{dtype, std::move(shape), {}};
  std::uint64_t count = dtype.itemsize;
  for (auto d : array.shape) count *= d;
  for (std::uint64_t i = 0; i < count; ++i) array.bytes.push_back((i * 31 + seed * 7) % 251);
  return array;
}

std::string json_of(std::uint64_t i) {
  return "{\"index\": " + std::to_string(i) + ", \"name\": \"s\\u00e9" + std::to_string(i) + "\"}";
}

// Writes `count` labelled raw images, image i made by `image_of`, and checks that each reads back
// bit for bit.
void check_raw_round_trip(std::uint64_t count,
                          const std::function<RgbImage(std::uint64_t)>& image_of,
                          const WriterOptions& options = {}) {
  TempDir dir;
  const FunctionSource source(count, [&](std::uint64_t i) -> std::vector<FieldValue> {
    return {image_of(i), static_cast<std::int64_t>(i)};
  });
  DatasetWriter(
      dir.file("raw.beton"),
      {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}},
      options)
      .write(source);
  const Reader reader(dir.file("raw.beton"));
  for (std::uint64_t i = 0; i < count; ++i) {
    const RgbImage expected = image_of(i);
    const RgbImage got = std::get<RgbImage>(reader.decode(i, 0));
    REQUIRE(got.width == expected.width);
    REQUIRE(got.height == expected.height);
    CHECK(got.pixels == expected.pixels);
  }
}

}  // namespace

TEST_CASE("scalars, arrays, bytes and JSON round-trip exactly", "[roundtrip]") {
  TempDir dir;
  const DType f4 = DType::parse("<f4"), i8 = DType::parse("<i8"), b1 = DType::parse("|b1");
  std::vector<NamedField> fields = {
      {"int", std::make_shared<IntField>()},
      {"float", std::make_shared<FloatField>()},
      {"matrix", std::make_shared<NdArrayField>(f4, std::vector<std::uint64_t>{3, 5})},
      {"longs", std::make_shared<NdArrayField>(i8, std::vector<std::uint64_t>{7})},
      {"mask", std::make_shared<NdArrayField>(b1, std::vector<std::uint64_t>{2, 2, 2})},
      {"blob", std::make_shared<BytesField>()},
      {"json", std::make_shared<JsonField>()},
  };
  constexpr std::uint64_t kCount = 257;
  auto make = [&](std::uint64_t i) -> std::vector<FieldValue> {
    Bytes blob(1 + (i * 37) % 300);
    for (std::size_t k = 0; k < blob.size(); ++k) blob[k] = static_cast<std::uint8_t>(k ^ i);
    return {static_cast<std::int64_t>(i) * 7 - 3 - (i == 5 ? (std::int64_t{1} << 62) : 0),
            std::sin(static_cast<double>(i)),
            make_array(f4, {3, 5}, i),
            make_array(i8, {7}, i),
            make_array(b1, {2, 2, 2}, i),
            blob,
            JsonText{json_of(i)}};
  };
  const FunctionSource source(kCount, make);
  DatasetWriter(dir.file("all.beton"), fields, {.num_workers = 3}).write(source);

  const Reader reader(dir.file("all.beton"));
  REQUIRE(reader.num_samples() == kCount);
  REQUIRE(reader.fields().size() == fields.size());
  CHECK(reader.fields()[2].field->type_name() == "NDArray");
  for (std::uint64_t i = 0; i < kCount; ++i) {
    const auto expected = make(i);
    CHECK(std::get<std::int64_t>(reader.decode(i, 0)) == std::get<std::int64_t>(expected[0]));
    CHECK(std::get<double>(reader.decode(i, 1)) == std::get<double>(expected[1]));
    for (std::size_t f = 2; f <= 4; ++f) {
      const auto array = std::get<NdArray>(reader.decode(i, f));
      CHECK(array.bytes == std::get<NdArray>(expected[f]).bytes);
      CHECK(array.dtype == std::get<NdArray>(expected[f]).dtype);
    }
    CHECK(std::get<Bytes>(reader.decode(i, 5)) == std::get<Bytes>(expected[5]));
    CHECK(std::get<JsonText>(reader.decode(i, 6)).text == json_of(i));
  }
}

TEST_CASE("raw images round-trip bit-exactly at many sizes", "[roundtrip][image]") {
  check_raw_round_trip(64, [](std::uint64_t i) {
    return test::gradient_image(1 + static_cast<int>(i * 13 % 97), 1 + static_cast<int>(i * 7 % 61),
                                i);
  });
}

TEST_CASE("raw images of hundreds of KB round-trip bit-exactly at odd offsets in the page",
          "[roundtrip][image]") {
  // Payloads of 64 KB and more are copied into the page with streaming stores; odd sizes put
  // their starts and ends off every alignment, and a small page makes many pages.
  WriterOptions options;
  options.page_size = 2 << 20;
  options.num_workers = 3;
  check_raw_round_trip(
      40,
      [](std::uint64_t i) {
        return test::gradient_image(150 + static_cast<int>(i * 37 % 211),
                                    149 + static_cast<int>(i * 53 % 173), i);
      },
      options);
}

TEST_CASE("JPEG images decode close to the original", "[roundtrip][image]") {
  // Smooth gradients at quality 90 lose little: 35 dB is a loose floor for them (typical
  // values are above 40 dB) that still catches a channel swap, a shifted row or a wrong size.
  TempDir dir;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {test::gradient_image(64 + static_cast<int>(i % 5) * 40,
                                 48 + static_cast<int>(i % 3) * 50, i)};
  };
  const FunctionSource source(20, make);
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kJpg;
  DatasetWriter(dir.file("jpg.beton"), {{"image", std::make_shared<RgbImageField>(options)}})
      .write(source);
  const Reader reader(dir.file("jpg.beton"));
  for (std::uint64_t i = 0; i < 20; ++i) {
    const RgbImage expected = std::get<RgbImage>(make(i)[0]);
    const RgbImage got = std::get<RgbImage>(reader.decode(i, 0));
    REQUIRE(got.width == expected.width);
    REQUIRE(got.height == expected.height);
    CHECK(test::psnr(got, expected) > 35.0);
    CHECK(ImageMetadata::load(reader.column(i, 0)).mode == StoredImageMode::kJpg);
  }
}

TEST_CASE("max_resolution downscales like FFCV: longer side fixed, other side truncated",
          "[roundtrip][image]") {
  TempDir dir;
  RgbImageOptions options;
  options.max_resolution = 100;
  const std::vector<std::pair<int, int>> sizes = {{300, 201}, {99, 400}, {80, 60}, {1000, 1}};
  auto make = [&](std::uint64_t i) -> std::vector<FieldValue> {
    return {test::gradient_image(sizes[i].first, sizes[i].second, i)};
  };
  DatasetWriter(dir.file("resized.beton"), {{"image", std::make_shared<RgbImageField>(options)}})
      .write(FunctionSource(sizes.size(), make));
  const Reader reader(dir.file("resized.beton"));
  const std::vector<std::pair<int, int>> expected = {{100, 67}, {24, 100}, {80, 60}, {100, 1}};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const ImageMetadata metadata = ImageMetadata::load(reader.column(i, 0));
    CHECK(metadata.width == expected[i].first);
    CHECK(metadata.height == expected[i].second);
  }
}

TEST_CASE("smart mode stores JPEG only above the byte threshold", "[roundtrip][image]") {
  TempDir dir;
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kSmart;
  options.smart_threshold = 32 * 32 * 3;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {test::gradient_image(i % 2 ? 64 : 16, i % 2 ? 64 : 16, i)};
  };
  DatasetWriter(dir.file("smart.beton"), {{"image", std::make_shared<RgbImageField>(options)}})
      .write(FunctionSource(10, make));
  const Reader reader(dir.file("smart.beton"));
  for (std::uint64_t i = 0; i < 10; ++i) {
    CHECK(ImageMetadata::load(reader.column(i, 0)).mode ==
          (i % 2 ? StoredImageMode::kJpg : StoredImageMode::kRaw));
  }
  // Without a threshold, smart stores raw (FFCV's behaviour).
  options.smart_threshold.reset();
  DatasetWriter(dir.file("smart-raw.beton"), {{"image", std::make_shared<RgbImageField>(options)}})
      .write(FunctionSource(4, make));
  const Reader raw_reader(dir.file("smart-raw.beton"));
  for (std::uint64_t i = 0; i < 4; ++i) {
    CHECK(ImageMetadata::load(raw_reader.column(i, 0)).mode == StoredImageMode::kRaw);
  }
}

TEST_CASE("proportion mode compresses the requested share, decided by seed and index",
          "[roundtrip][image]") {
  TempDir dir;
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kProportion;
  options.compress_probability = 0.3;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {test::gradient_image(8, 8, i)};
  };
  constexpr std::uint64_t kCount = 2000;
  auto jpeg_flags = [&](std::uint64_t seed, int workers) {
    const std::string path = dir.file("p" + std::to_string(seed) + "-" + std::to_string(workers));
    DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(options)}},
                  {.num_workers = workers, .seed = seed})
        .write(FunctionSource(kCount, make));
    const Reader reader(path);
    std::vector<bool> flags;
    for (std::uint64_t i = 0; i < kCount; ++i) {
      flags.push_back(ImageMetadata::load(reader.column(i, 0)).mode == StoredImageMode::kJpg);
    }
    return flags;
  };
  const auto flags = jpeg_flags(1, 1);
  const double share = std::count(flags.begin(), flags.end(), true) / double(kCount);
  CHECK(share == Approx(0.3).margin(0.04));  // binomial sd ~0.01
  CHECK(jpeg_flags(1, 4) == flags);
  CHECK(jpeg_flags(2, 1) != flags);
}

TEST_CASE("JPEG codec round-trips and rejects garbage", "[roundtrip][image]") {
  const RgbImage image = test::gradient_image(33, 17, 3);
  const auto jpeg = encode_jpeg(image, 95);
  CHECK(read_jpeg_info(jpeg).width == 33);
  CHECK(read_jpeg_info(jpeg).height == 17);
  CHECK(test::psnr(decode_jpeg(jpeg), image) > 35.0);
  const std::vector<std::uint8_t> garbage(100, 0x42);
  CHECK_THROWS_AS(decode_jpeg(garbage), EncodeError);
  std::vector<std::uint8_t> truncated(jpeg.begin(), jpeg.begin() + 40);
  CHECK_THROWS_AS(read_jpeg_info(truncated), EncodeError);
  // A failure must not poison this thread's decoder for the next, valid file.
  CHECK(read_jpeg_info(jpeg).width == 33);
  CHECK(test::psnr(decode_jpeg(jpeg), image) > 35.0);
}

TEST_CASE("JPEG encode options: chroma, progressive, and bytes that do not depend on the past",
          "[roundtrip][image]") {
  using Chroma = JpegEncodeOptions::Chroma;
  const RgbImage image = test::gradient_image(64, 48, 5);
  const auto baseline = encode_jpeg(image, {.quality = 95});
  CHECK(baseline == encode_jpeg(image, 95));  // the defaults are the writer's encoding
  const auto full = encode_jpeg(image, {.quality = 95, .chroma = Chroma::k444});
  const auto progressive = encode_jpeg(image, {.quality = 95, .progressive = true});
  CHECK(full != baseline);
  CHECK(progressive != baseline);
  CHECK(full.size() > baseline.size());  // four times the chroma blocks
  CHECK(test::psnr(decode_jpeg(full), image) > 35.0);
  CHECK(test::psnr(decode_jpeg(progressive), image) > 35.0);
  // A progressive encode on this thread leaves the next baseline encode unchanged.
  CHECK(encode_jpeg(image, 95) == baseline);
  const RgbImage gray = decode_jpeg(encode_jpeg(image, {.quality = 95, .chroma = Chroma::kGray}));
  for (std::size_t p = 0; p < gray.pixels.size(); p += 3) {
    REQUIRE(gray.pixels[p] == gray.pixels[p + 1]);
    REQUIRE(gray.pixels[p] == gray.pixels[p + 2]);
  }
}

TEST_CASE("JPEG decode bounded by a side or a pixel count takes the largest scale that fits",
          "[roundtrip][image]") {
  const auto jpeg = encode_jpeg(test::gradient_image(400, 300, 7), 90);
  const RgbImage side = decode_jpeg(jpeg, {.max_side = 100});
  CHECK(side.width == 100);  // 1/4: 3/8 would be 150 wide
  CHECK(side.height == 75);
  const RgbImage pixels = decode_jpeg(jpeg, {.max_pixels = 200.0 * 150.0});
  CHECK(pixels.width == 200);  // 1/2 exactly fits; 5/8 (250x188) does not
  CHECK(pixels.height == 150);
  const RgbImage none = decode_jpeg(jpeg, {.max_side = 10});
  CHECK(none.width == 50);  // nothing fits: the smallest scale, 1/8
  CHECK(decode_jpeg(jpeg, {.max_side = 4000}).width == 400);  // never above full size
}

TEST_CASE("JPEG decode through warnings only when asked, never for dataset samples",
          "[roundtrip][image]") {
  const RgbImage image = test::gradient_image(256, 256, 9);
  const auto jpeg = encode_jpeg(image, 90);
  // Cut the entropy-coded data in half: libjpeg warns of a premature end and fills in gray.
  std::vector<std::uint8_t> cut(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  CHECK_THROWS_AS(decode_jpeg(cut), EncodeError);
  const RgbImage filled = decode_jpeg(cut, {.warnings_are_errors = false});
  CHECK(filled.width == 256);
  CHECK(filled.height == 256);
  CHECK(test::psnr(decode_jpeg(jpeg), image) > 30.0);  // the thread's decoder still works
}

namespace {

// A user-defined field (FFCV's "custom field", type id 255): a 3-byte RGB colour stored in the
// metadata column itself, with a tag in its argument blob.
class ColorField final : public Field {
 public:
  explicit ColorField(std::uint8_t tag) : tag_(tag) {}
  std::uint8_t type_id() const override { return kCustomFieldTypeId; }
  std::string type_name() const override { return "Color"; }
  ColumnType column_type() const override { return {3, 1}; }
  FieldArgs args() const override {
    FieldArgs args{};
    args[0] = tag_;
    return args;
  }
  void encode(const FieldValue& value, std::uint8_t* column, std::vector<EncodedAllocation>&,
              const EncodeContext&) const override {
    const auto rgb = std::get<std::int64_t>(value);
    column[0] = rgb & 0xff;
    column[1] = (rgb >> 8) & 0xff;
    column[2] = (rgb >> 16) & 0xff;
  }
  FieldValue decode(const std::uint8_t* column, const PayloadReader&) const override {
    return std::int64_t{column[0]} | std::int64_t{column[1]} << 8 | std::int64_t{column[2]} << 16;
  }
  std::string describe(const std::uint8_t*) const override { return "{}"; }
  std::uint8_t tag() const { return tag_; }

 private:
  std::uint8_t tag_;
};

}  // namespace

TEST_CASE("custom fields plug in by name and keep their argument blob", "[roundtrip]") {
  TempDir dir;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {static_cast<std::int64_t>(i * 0x010203), static_cast<std::int64_t>(i)};
  };
  DatasetWriter(dir.file("custom.beton"), {{"color", std::make_shared<ColorField>(42)},
                                           {"label", std::make_shared<IntField>()}})
      .write(FunctionSource(50, make));
  CHECK_THROWS_WITH(Reader(dir.file("custom.beton")), Catch::Contains("custom field"));
  ReaderOptions options;
  options.custom_fields["color"] = [](const FieldArgs& args) {
    return std::make_shared<ColorField>(args[0]);
  };
  const Reader reader(dir.file("custom.beton"), options);
  CHECK(dynamic_cast<const ColorField&>(*reader.fields()[0].field).tag() == 42);
  CHECK(reader.layout().column_offsets[1] == 8);  // 3 bytes, then the int64 aligned to 8
  for (std::uint64_t i = 0; i < 50; ++i) {
    CHECK(std::get<std::int64_t>(reader.decode(i, 0)) == static_cast<std::int64_t>(i * 0x010203));
    CHECK(std::get<std::int64_t>(reader.decode(i, 1)) == static_cast<std::int64_t>(i));
  }
}

TEST_CASE("JPEG sources decoded at a reduced DCT scale match a full decode and area resize",
          "[roundtrip][image]") {
  // The writer decodes a source JPEG at the smallest n/8 scale that still covers the stored
  // size. Reference: full-size accurate decode, then OpenCV INTER_AREA (FFCV's writer path).
  // DCT-domain scaling and area averaging differ by rounding and filter shape only; 35 dB on
  // smooth content leaves room for that and fails on any geometric error.
  TempDir dir;
  const RgbImage original = test::gradient_image(1000, 750, 9);
  const JpegFile file{encode_jpeg(original, 95)};
  RgbImageOptions options;
  options.max_resolution = 200;
  DatasetWriter(dir.file("scaled.beton"), {{"image", std::make_shared<RgbImageField>(options)}})
      .write(FunctionSource(1, [&](std::uint64_t) { return std::vector<FieldValue>{file}; }));
  const RgbImage stored = std::get<RgbImage>(Reader(dir.file("scaled.beton")).decode(0, 0));
  REQUIRE(stored.width == 200);
  REQUIRE(stored.height == 150);
  const RgbImage full = decode_jpeg(file.bytes, {.fast_dct = false});
  RgbImage reference{200, 150, std::vector<std::uint8_t>(200 * 150 * 3)};
  cv::resize(cv::Mat(750, 1000, CV_8UC3, const_cast<std::uint8_t*>(full.pixels.data())),
             cv::Mat(150, 200, CV_8UC3, reference.pixels.data()), cv::Size(200, 150), 0, 0,
             cv::INTER_AREA);
  CHECK(test::psnr(stored, reference) > 35.0);
  // Scaled decoding picks the smallest scale still covering the request.
  const RgbImage quarter = decode_jpeg(file.bytes, {.min_width = 200, .min_height = 150});
  CHECK(quarter.width == 250);
  CHECK(quarter.height == 188);
}
