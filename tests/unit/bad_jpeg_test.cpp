// One definition of a bad JPEG (jpeg_codec.hpp) for every decoder, the writer's source check and
// `ffcv inspect --verify`: damaged data, a truncated file, extraneous bytes, or a frame of another
// size than the metadata states.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/jpeg_window.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

constexpr int kWidth = 96, kHeight = 64;

std::vector<std::uint8_t> good_jpeg(std::uint64_t seed) {
  return encode_jpeg(test::gradient_image(kWidth, kHeight, seed), 90);
}

// The offset of the start-of-scan segment's entropy data.
std::size_t entropy_start(const std::vector<std::uint8_t>& jpeg) {
  for (std::size_t i = 2; i + 3 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) return i + 2 + (jpeg[i + 2] << 8 | jpeg[i + 3]);
  }
  FAIL("no SOS marker");
  return 0;
}

// Damaged variants of the same length as `jpeg` (so that they fit its place in a .beton).
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> same_length_damage(
    const std::vector<std::uint8_t>& jpeg) {
  const std::size_t data = entropy_start(jpeg);
  std::vector<std::uint8_t> truncated = jpeg;  // the second half lost (zeros, no EOI)
  std::fill(truncated.begin() + data + (jpeg.size() - data) / 2, truncated.end(), 0);
  std::vector<std::uint8_t> marker = jpeg;  // a marker in the middle of the entropy data
  const std::size_t middle = data + (jpeg.size() - data) / 2;
  marker[middle] = 0xFF;
  marker[middle + 1] = 0xD0;
  return {{"truncated", truncated}, {"marker in the data", marker}};
}

std::vector<std::uint8_t> with_extraneous_bytes(const std::vector<std::uint8_t>& jpeg) {
  std::vector<std::uint8_t> out = jpeg;  // junk between two header segments, before SOS
  for (std::size_t i = 2; i + 1 < out.size(); ++i) {
    if (out[i] == 0xFF && out[i + 1] == 0xDA) {
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), {0x12, 0x34, 0x56});
      break;
    }
  }
  return out;
}

// Every JPEG decoder of the loader, by name.
const std::vector<std::pair<std::string, OpParams>>& decoders() {
  static const std::vector<std::pair<std::string, OpParams>> list = [] {
    OpParams crop;
    crop.set("size", std::int64_t{32});
    OpParams full_crop = crop;  // covers the whole image: reads every byte
    full_crop.set("scale", std::vector<double>{1.0, 1.0});
    full_crop.set("ratio", std::vector<double>{1.5, 1.5});
    return std::vector<std::pair<std::string, OpParams>>{
        {"image", {}}, {"center_crop", crop}, {"random_resized_crop", full_crop}};
  }();
  return list;
}

}  // namespace

TEST_CASE("damaged, truncated and padded JPEGs are refused by every decoding path",
          "[jpeg][bad_jpeg]") {
  const std::vector<std::uint8_t> jpeg = good_jpeg(1);
  CHECK_NOTHROW(validate_jpeg(jpeg, kWidth, kHeight));
  auto bad = same_length_damage(jpeg);
  bad.emplace_back("extraneous bytes", with_extraneous_bytes(jpeg));
  bad.emplace_back("cut in half",
                   std::vector<std::uint8_t>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
  std::vector<std::uint8_t> out(kWidth * kHeight * 3), window;
  JpegWindowRequest whole;
  whole.width = kWidth;
  whole.height = kHeight;
  whole.min_out_width = kWidth;
  whole.min_out_height = kHeight;
  for (const auto& [what, bytes] : bad) {
    INFO(what);
    CHECK_THROWS_AS(validate_jpeg(bytes), EncodeError);
    CHECK_THROWS_AS(decode_jpeg(bytes), EncodeError);
    CHECK_THROWS_AS(decode_jpeg_into(bytes, out.data(), kWidth, kHeight), EncodeError);
    CHECK_THROWS_AS(decode_jpeg_window(bytes, whole, window), EncodeError);
  }
  // The frame size against the metadata, in every path that knows it.
  CHECK_THROWS_WITH(validate_jpeg(jpeg, kWidth, kHeight + 1), Catch::Contains("metadata size"));
  CHECK_THROWS_WITH(decode_jpeg_into(jpeg, out.data(), kWidth, kHeight - 1),
                    Catch::Contains("metadata size"));
  JpegWindowRequest other = whole;
  other.frame_width = kWidth + 8;
  other.frame_height = kHeight;
  CHECK_THROWS_WITH(decode_jpeg_window(jpeg, other, window), Catch::Contains("metadata size"));
  // The decoders stay usable after each refusal.
  CHECK_NOTHROW(decode_jpeg_window(jpeg, whole, window));
  CHECK_NOTHROW(decode_jpeg(jpeg));
}

TEST_CASE("every decoder refuses the same planted samples, inspect --verify lists them",
          "[jpeg][bad_jpeg][cli]") {
  test::TempDir dir;
  const std::string path = dir.file("images.beton");
  RgbImageOptions jpg;
  jpg.write_mode = ImageWriteMode::kJpg;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(jpg)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(40, [](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(kWidth, kHeight, i),
                                       static_cast<std::int64_t>(i % 2)};
      }));
  std::string out;
  REQUIRE(test::run_cli("inspect " + path + " --verify", out) == 0);
  CHECK_THAT(out, Catch::Contains("40 samples decoded") && Catch::Contains("all good"));

  // Plant: samples 3 and 21 damaged in place; sample 30 a JPEG of another width than its
  // metadata states (zeros after its end marker fill its place).
  std::vector<std::uint8_t> bytes = test::read_file(path);
  {
    const Reader reader(path);
    const std::size_t damaged[] = {3, 21};
    for (std::size_t k = 0; k < 2; ++k) {
      const ImageMetadata image = ImageMetadata::load(reader.column(damaged[k], 0));
      const auto payload = reader.payload(image.data_ptr);
      const std::vector<std::uint8_t> jpeg(payload.begin(), payload.end());
      const auto variant = same_length_damage(jpeg)[k].second;
      std::copy(variant.begin(), variant.end(), bytes.begin() + image.data_ptr);
    }
    const ImageMetadata image = ImageMetadata::load(reader.column(30, 0));
    const std::vector<std::uint8_t> narrower =
        encode_jpeg(test::gradient_image(kWidth / 2, kHeight, 30), 90);
    REQUIRE(narrower.size() <= reader.payload(image.data_ptr).size());
    std::fill_n(bytes.begin() + image.data_ptr, reader.payload(image.data_ptr).size(), 0);
    std::copy(narrower.begin(), narrower.end(), bytes.begin() + image.data_ptr);
  }
  test::write_file(path, bytes);

  for (const auto& [name, params] : decoders()) {
    INFO(name);
    LoaderOptions options;
    options.batch_size = 1;
    options.num_workers = 2;
    options.default_pipelines = false;
    options.on_error = OnSampleError::kSkip;
    options.max_skipped_fraction = 0.1;
    Loader loader(path, {{"image", "image", OpRegistry::global().make_decoder(name, params), {}}},
                  options);
    auto epoch = loader.epoch(0);
    std::uint64_t handed_out = 0;
    while (auto batch = epoch.next()) handed_out += batch->size();
    std::set<std::uint64_t> skipped;
    for (const SkippedSample& s : epoch.skipped()) skipped.insert(s.index);
    CHECK(skipped == std::set<std::uint64_t>{3, 21, 30});
    CHECK(handed_out == 37);
  }

  CHECK(test::run_cli("inspect " + path + " --verify", out) == 1);
  CHECK_THAT(out, Catch::Contains("3 bad") && Catch::Contains("sample 3, field 'image'") &&
                      Catch::Contains("sample 21, field 'image'") &&
                      Catch::Contains("sample 30, field 'image'") &&
                      Catch::Contains("does not match its metadata size"));
  CHECK(test::run_cli("inspect " + path + " --verify --json --workers 1", out) == 1);
  CHECK_THAT(out, Catch::Contains("\"sample\": 3, \"field\": \"image\""));
  // Without --verify the structure alone is checked, as before.
  CHECK(test::run_cli("inspect " + path, out) == 0);
}
