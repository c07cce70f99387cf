// Dataset sources (.npy, IDX, image folders) and the `ffcv` CLI end to end.
#include <catch2/catch.hpp>

#include <filesystem>

#ifdef FFCV_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/format/npy_array.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "sources/first_samples.hpp"
#include "sources/idx_source.hpp"
#include "sources/image_folder_source.hpp"
#include "sources/npy_source.hpp"
#include "sources/side_rows.hpp"
#include "test_support.hpp"

using namespace ffcv;
using namespace ffcv::tools;
using test::TempDir;

namespace {

NpyArray float_matrix(std::uint64_t rows, std::uint64_t cols) {
  NpyArray array{DType::parse("<f4"), {rows, cols}, std::vector<std::uint8_t>(rows * cols * 4)};
  for (std::uint64_t i = 0; i < rows * cols; ++i) {
    store_le(&array.data[i * 4], static_cast<float>(i) * 0.5f - 3.0f);
  }
  return array;
}

// A flat image of BGR colour (value, value / 2, 255 - value). Without OpenCV's imgcodecs (a
// build that reads JPEG sources only) the file holds a JPEG under the same name: sources tell
// formats by content, and the tests that need exact PNG pixels check them only with imgcodecs.
void write_png(const std::string& path, int width, int height, int value) {
#ifdef FFCV_HAVE_IMGCODECS
  cv::imwrite(path, cv::Mat(height, width, CV_8UC3, cv::Scalar(value, value / 2, 255 - value)));
#else
  RgbImage image{width, height, {}};
  for (int i = 0; i < width * height; ++i) {
    image.pixels.insert(image.pixels.end(),
                        {static_cast<std::uint8_t>(255 - value),
                         static_cast<std::uint8_t>(value / 2), static_cast<std::uint8_t>(value)});
  }
  test::write_file(path, encode_jpeg(image, 95));
#endif
}

// A bool array of shape {rows, dims...}: a pattern with runs and gaps, not periodic in 8.
NpyArray bool_array(std::vector<std::uint64_t> shape) {
  std::uint64_t count = 1;
  for (const std::uint64_t dim : shape) count *= dim;
  NpyArray array{DType::parse("|b1"), std::move(shape), std::vector<std::uint8_t>(count)};
  for (std::uint64_t i = 0; i < count; ++i) array.data[i] = (i * i + 3 * i) % 7 < 3 ? 1 : 0;
  return array;
}

// numpy.packbits(mask, bitorder='big'), computed per output byte.
std::vector<std::uint8_t> packed_reference(const std::uint8_t* mask, std::uint64_t bits) {
  std::vector<std::uint8_t> out;
  for (std::uint64_t start = 0; start < bits; start += 8) {
    unsigned byte = 0;
    for (std::uint64_t k = 0; k < 8; ++k) {
      byte = byte * 2 + (start + k < bits && mask[start + k] != 0 ? 1 : 0);
    }
    out.push_back(static_cast<std::uint8_t>(byte));
  }
  return out;
}

}  // namespace

TEST_CASE("the write command's wrappers pass read-ahead hints through (--rows, --subset)",
          "[sources]") {
  // `ffcv write` wraps every source in both; a wrapper that drops prefetch() leaves the writer's
  // read-ahead doing nothing.
  struct Hinted final : SampleSource {
    std::uint64_t size() const override { return 10; }
    std::vector<FieldValue> load(std::uint64_t index) const override {
      return {static_cast<std::int64_t>(index)};
    }
    void prefetch(std::uint64_t index) const override { hints.push_back(index); }
    mutable std::vector<std::uint64_t> hints;
  } source;
  const WithSideRows with_rows(source, {});
  const FirstSamples first(with_rows, 6);
  for (std::uint64_t i = 0; i < 10; ++i) first.prefetch(i);
  CHECK(source.hints == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5});  // none past the subset
}

TEST_CASE(".npy files round-trip and become features/target columns", "[sources]") {
  TempDir dir;
  write_npy(dir.file("x.npy"), float_matrix(10, 3));
  NpyArray targets{DType::parse("<i8"), {10}, std::vector<std::uint8_t>(80)};
  for (int i = 0; i < 10; ++i) store_le<std::int64_t>(&targets.data[i * 8], i * i);
  write_npy(dir.file("y.npy"), targets);
  const NpyArray back = read_npy(dir.file("x.npy"));
  CHECK(back.shape == std::vector<std::uint64_t>{10, 3});
  CHECK(back.data == float_matrix(10, 3).data);

  const NpySource source(dir.file("x.npy"), dir.file("y.npy"));
  const auto fields = source.fields();
  CHECK(fields[0].field->type_name() == "NDArray");
  CHECK(fields[1].field->type_name() == "Int");
  DatasetWriter(dir.file("reg.beton"), fields).write(source);
  const Reader reader(dir.file("reg.beton"));
  CHECK(std::get<std::int64_t>(reader.decode(7, 1)) == 49);
  const NdArray row = std::get<NdArray>(reader.decode(2, 0));
  CHECK(load_le<float>(&row.bytes[4]) == Approx(7 * 0.5f - 3.0f));

  write_npy(dir.file("short.npy"), float_matrix(9, 3));
  CHECK_THROWS_WITH(NpySource(dir.file("short.npy"), dir.file("y.npy")), Catch::Contains("9 rows"));
  test::write_file(dir.file("bad.npy"), {1, 2, 3});
  CHECK_THROWS_WITH(read_npy(dir.file("bad.npy")), Catch::Contains("not a .npy file"));
}

TEST_CASE("write npy --pack-bits stores each bool row as numpy.packbits(row)", "[sources][cli]") {
  // d = 13 and 15 (a 3x5 row, flattened) end inside a byte; d = 64 fills whole bytes.
  for (const std::vector<std::uint64_t> row_shape :
       {std::vector<std::uint64_t>{13}, {64}, {3, 5}}) {
    const std::uint64_t rows = 21;
    const std::uint64_t bits = row_shape.size() == 1 ? row_shape[0] : row_shape[0] * row_shape[1];
    const std::uint64_t packed_size = (bits + 7) / 8;
    CAPTURE(bits);
    TempDir dir;
    std::vector<std::uint64_t> shape{rows};
    shape.insert(shape.end(), row_shape.begin(), row_shape.end());
    const NpyArray features = bool_array(shape);
    write_npy(dir.file("x.npy"), features);
    NpyArray targets{DType::parse("<i8"), {rows}, std::vector<std::uint8_t>(rows * 8)};
    for (std::uint64_t i = 0; i < rows; ++i) store_le<std::int64_t>(&targets.data[i * 8], 5 * i);
    write_npy(dir.file("y.npy"), targets);
    // A sidecar of an earlier write is replaced.
    test::write_file(dir.file("out.beton.sources.json"), {'{', '}'});

    std::string out;
    REQUIRE(test::run_cli("write npy --features " + dir.file("x.npy") + " --targets " +
                              dir.file("y.npy") + " --output " + dir.file("out.beton") +
                              " --pack-bits",
                          out) == 0);
    CHECK_THAT(out, Catch::Contains("features: " + std::to_string(bits) + " booleans packed into " +
                                    std::to_string(packed_size) + " bytes per sample") &&
                        Catch::Contains("mask_bits = " + std::to_string(bits)));
    CHECK_THAT(test::text_of(dir.file("out.beton.sources.json")),
               Catch::Contains("\"packed_bits\": " + std::to_string(bits)));

    const Reader reader(dir.file("out.beton"));
    REQUIRE(reader.num_samples() == rows);
    REQUIRE(reader.fields()[0].name == "features");
    const auto& field = dynamic_cast<const NdArrayField&>(*reader.fields()[0].field);
    CHECK(field.dtype().typestr() == "|u1");
    CHECK(field.shape() == std::vector<std::uint64_t>{packed_size});
    CHECK(reader.fields()[1].name == "target");
    for (std::uint64_t i = 0; i < rows; ++i) {
      const NdArray row = std::get<NdArray>(reader.decode(i, 0));
      CHECK(row.bytes == packed_reference(&features.data[i * bits], bits));
      CHECK(std::get<std::int64_t>(reader.decode(i, 1)) == static_cast<std::int64_t>(5 * i));
    }

    // Without --pack-bits, bool features stay numpy bool, and the packed sidecar goes.
    REQUIRE(test::run_cli("write npy --features " + dir.file("x.npy") + " --targets " +
                              dir.file("y.npy") + " --output " + dir.file("out.beton"),
                          out) == 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("out.beton.sources.json")));
    const Reader plain(dir.file("out.beton"));
    const NdArray row = std::get<NdArray>(plain.decode(4, 0));
    CHECK(row.dtype.typestr() == "|b1");
    CHECK(row.shape == row_shape);
    CHECK(std::equal(row.bytes.begin(), row.bytes.end(), &features.data[4 * bits]));
  }
}

TEST_CASE("pack_bits packs as numpy.packbits with bitorder big", "[sources]") {
  const std::vector<std::uint8_t> mask{1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 7};
  CHECK(pack_bits(mask) == std::vector<std::uint8_t>{0x81, 0x60});
  CHECK(pack_bits({}).empty());
}

TEST_CASE("write npy keeps float16 features and targets as <f2", "[sources][cli]") {
  TempDir dir;
  const std::uint64_t rows = 9;
  NpyArray features{DType::parse("<f2"), {rows, 3}, std::vector<std::uint8_t>(rows * 3 * 2)};
  for (std::uint64_t i = 0; i < features.data.size(); ++i) {
    features.data[i] = static_cast<std::uint8_t>(i * 37 + 11);
  }
  NpyArray targets{DType::parse("<f2"), {rows}, std::vector<std::uint8_t>(rows * 2)};
  for (std::uint64_t i = 0; i < rows; ++i) {
    store_le<std::uint16_t>(&targets.data[i * 2], static_cast<std::uint16_t>(0x3c00 + i));
  }
  write_npy(dir.file("x.npy"), features);
  write_npy(dir.file("y.npy"), targets);
  std::string out;
  REQUIRE(test::run_cli("write npy --features " + dir.file("x.npy") + " --targets " +
                            dir.file("y.npy") + " --output " + dir.file("half.beton"),
                        out) == 0);
  CHECK_FALSE(std::filesystem::exists(dir.file("half.beton.sources.json")));
  const Reader reader(dir.file("half.beton"));
  REQUIRE(reader.num_samples() == rows);
  for (std::uint64_t i = 0; i < rows; ++i) {
    const NdArray x = std::get<NdArray>(reader.decode(i, 0));
    CHECK(x.dtype.typestr() == "<f2");
    CHECK(x.shape == std::vector<std::uint64_t>{3});
    CHECK(std::equal(x.bytes.begin(), x.bytes.end(), &features.data[i * 6]));
    const NdArray y = std::get<NdArray>(reader.decode(i, 1));
    CHECK(y.dtype.typestr() == "<f2");
    CHECK(y.shape == std::vector<std::uint64_t>{1});
    CHECK(load_le<std::uint16_t>(y.bytes.data()) == 0x3c00 + i);
  }
}

TEST_CASE("Fashion-MNIST from Debian's package reads as 28x28 RGB with 10 labels", "[sources]") {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz")) {
    ffcv::test::skip_test("dataset-fashion-mnist is not installed");
    return;
  }
  const IdxSource test_split = IdxSource::fashion_mnist(kFashionMnistDir, "test");
  CHECK(test_split.size() == 10000);
  std::vector<int> per_label(10);
  for (std::uint64_t i = 0; i < test_split.size(); i += 1) {
    ++per_label.at(static_cast<std::size_t>(std::get<std::int64_t>(test_split.load(i)[1])));
  }
  for (const int count : per_label) CHECK(count == 1000);  // the test split is balanced
  const RgbImage image = std::get<RgbImage>(test_split.load(0)[0]);
  CHECK(image.width == 28);
  CHECK(image.pixels[0] == image.pixels[1]);
  CHECK_THROWS_AS(IdxSource::fashion_mnist(kFashionMnistDir, "validation"), ConfigError);
}

TEST_CASE("image folders: sorted classes, sorted files, images read as RGB", "[sources]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("b_cats"));
  std::filesystem::create_directories(dir.file("a_dogs"));
  write_png(dir.file("b_cats/2.png"), 10, 8, 200);
  write_png(dir.file("b_cats/1.png"), 12, 9, 100);
  write_png(dir.file("a_dogs/x.png"), 7, 5, 50);
  test::write_file(dir.file("a_dogs/notes.txt"), {'h', 'i'});
  const ImageFolderSource source(dir.path());
  CHECK(source.class_names() == std::vector<std::string>{"a_dogs", "b_cats"});
  REQUIRE(source.size() == 3);
  CHECK(source.files()[1] == dir.file("b_cats/1.png"));
  CHECK(source.label(1) == 1);
#ifdef FFCV_HAVE_IMGCODECS
  const RgbImage image = std::get<RgbImage>(source.load(1)[0]);
  CHECK(image.width == 12);
  // OpenCV's BGR (100, 50, 155) arrives as RGB (155, 50, 100).
  CHECK(image.pixels[0] == 155);
  CHECK(image.pixels[2] == 100);
#else
  // JPEG files are handed over undecoded, for the image field to decode.
  const JpegFile file = std::get<JpegFile>(source.load(1)[0]);
  CHECK(read_jpeg_info(file.bytes).width == 12);
#endif
  CHECK_THROWS_AS(ImageFolderSource(dir.file("a_dogs/x.png")), ConfigError);
}

TEST_CASE("ffcv write and inspect work end to end and fail clearly", "[cli]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("images/cls"));
  for (int i = 0; i < 5; ++i)
    write_png(dir.file("images/cls/" + std::to_string(i) + ".png"), 30 + i, 20, i * 40);
  std::string out;
  REQUIRE(test::run_cli("write folder " + dir.file("images") + " --output " + dir.file("a.beton") +
                            " --write-mode jpg --quiet",
                        out) == 0);
  CHECK(test::run_cli("inspect " + dir.file("a.beton"), out) == 0);
  CHECK_THAT(out, Catch::Contains("5 samples") && Catch::Contains("jpg 5"));
  // Written again over itself with --json: every stage reported, the file's replacement in
  // `finish`.
  REQUIRE(test::run_cli("write folder " + dir.file("images") + " --output " + dir.file("a.beton") +
                            " --write-mode jpg --json",
                        out) == 0);
  for (const char* stage :
       {"load", "decode", "resize", "compress", "check", "place", "committer_wait", "finish"}) {
    CHECK_THAT(out, Catch::Contains("\"" + std::string(stage) + "\": "));
  }
  CHECK(test::run_cli("inspect " + dir.file("a.beton") + " --json", out) == 0);
  CHECK_THAT(out, Catch::StartsWith("{\"path\"") && Catch::Contains("\"num_samples\": 5"));
  CHECK(test::run_cli("inspect " + dir.file("a.beton") + " --sample 4 --json", out) == 0);
  CHECK_THAT(out, Catch::Contains("\"width\": 34"));
#ifdef FFCV_HAVE_IMGCODECS
  CHECK(test::run_cli("inspect " + dir.file("a.beton") + " --export 2 " + dir.file("two.png"),
                      out) == 0);
  CHECK(cv::imread(dir.file("two.png")).cols == 32);
#endif

  // An undecodable image names the file; nothing is written.
  test::write_file(dir.file("images/cls/9.jpg"), {0xff, 0xd8, 0xff, 0x00, 0x12});
  CHECK(test::run_cli("write folder " + dir.file("images") + " --output " + dir.file("b.beton"),
                      out) == 1);
  CHECK_THAT(out, Catch::Contains("cls/9.jpg") && Catch::Contains("decod"));
  CHECK_FALSE(std::filesystem::exists(dir.file("b.beton")));
  // Unwritable output, corrupt input, mistyped options.
  CHECK(test::run_cli("write folder " + dir.file("images") + " --output /nonexistent/x.beton",
                      out) == 1);
  CHECK_THAT(out, Catch::Contains("/nonexistent/x.beton"));
  test::write_file(dir.file("junk.beton"), std::vector<std::uint8_t>(100, 7));
  CHECK(test::run_cli("inspect " + dir.file("junk.beton"), out) == 1);
  CHECK_THAT(out, Catch::Contains("junk.beton") && Catch::Contains("format version"));
  CHECK(test::run_cli("write folder x --outptu y", out) == 2);
  CHECK_THAT(out, Catch::Contains("did you mean --output"));
  CHECK(test::run_cli("inspect " + dir.file("a.beton") + " --sample 5", out) == 2);
  CHECK(test::run_cli("write --help", out) == 0);
  CHECK_THAT(out, Catch::Contains("--max-resolution"));
}
