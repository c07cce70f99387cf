// `ffcv write folder` with damaged source images: refused by default, naming the file, with the
// previous output intact; with --on-bad-image skip left out and listed, beside the class map,
// the files without an image extension and the empty class folders.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/reader.hpp"
#include "sources/image_file.hpp"
#include "test_support.hpp"

using namespace ffcv;
namespace fs = std::filesystem;

namespace {

// Classes a and b with four good JPEGs each, one damaged JPEG each, a .txt and a .gif, and an
// empty class folder.
void make_folder(const std::string& root) {
  for (const std::string cls : {"a", "b", "empty"}) fs::create_directories(root + "/" + cls);
  std::vector<std::uint8_t> jpeg;
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 4; ++i) {
      jpeg = encode_jpeg(test::gradient_image(50, 40, c * 10 + i), 90);
      test::write_file(root + "/" + "ab"[c] + "/" + std::to_string(i) + ".jpg", jpeg);
    }
  }
  // Damage inside the entropy-coded data, after the headers.
  std::size_t data = 0;
  for (std::size_t i = 2; i + 3 < jpeg.size() && data == 0; ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) data = i + 2 + (jpeg[i + 2] << 8 | jpeg[i + 3]);
  }
  REQUIRE(data > 0);
  const std::size_t middle = data + (jpeg.size() - data) / 2;
  test::write_file(root + "/a/truncated.jpg",
                   std::vector<std::uint8_t>(jpeg.begin(), jpeg.begin() + middle));
  std::vector<std::uint8_t> marker = jpeg;  // a marker in the middle of the entropy data
  marker[middle] = 0xFF;
  marker[middle + 1] = 0xD0;
  test::write_file(root + "/b/marker.jpg", marker);
  test::write_file(root + "/a/notes.txt", {'x'});
  test::write_file(root + "/b/anim.gif", {'G', 'I', 'F', '8', '9', 'a'});
}

}  // namespace

TEST_CASE("write folder refuses a damaged source image by default, naming it",
          "[cli][bad_source]") {
  test::TempDir dir;
  make_folder(dir.file("img"));
  const std::string output = dir.file("out.beton");
  fs::create_directories(dir.file("good/x"));
  test::write_file(dir.file("good/x/1.jpg"), encode_jpeg(test::gradient_image(30, 20, 1), 90));
  std::string out;
  REQUIRE(test::run_cli("write folder " + dir.file("good") + " --quiet --output " + output, out) ==
          0);
  const auto previous = test::read_file(output);
  CHECK(test::run_cli("write folder " + dir.file("img") + " --output " + output, out) == 1);
  CHECK_THAT(out, Catch::Contains("img/a/truncated.jpg") && Catch::Contains("Premature end"));
  CHECK(test::read_file(output) == previous);
  CHECK(test::run_cli(
            "write folder " + dir.file("img") + " --output " + output + " --on-bad-image maybe",
            out) == 2);
}

TEST_CASE("write folder --on-bad-image skip leaves damaged images out and lists them",
          "[cli][bad_source]") {
  test::TempDir dir;
  make_folder(dir.file("img"));
  const std::string output = dir.file("out.beton");
  std::string out;
  REQUIRE(test::run_cli(
              "write folder " + dir.file("img") + " --output " + output + " --on-bad-image skip",
              out) == 0);
  CHECK_THAT(out, Catch::Contains("labels: 0 = a, 1 = b, 2 = empty (3 classes)") &&
                      Catch::Contains("class folders without images") &&
                      Catch::Contains("left out 2 files without an image extension") &&
                      Catch::Contains("skipped " + dir.file("img") + "/a/truncated.jpg") &&
                      Catch::Contains("skipped " + dir.file("img") + "/b/marker.jpg"));
  const std::string sidecar = test::text_of(output + ".sources.json");
  CHECK_THAT(sidecar, Catch::Contains("\"classes\": [\"a\", \"b\", \"empty\"]") &&
                          Catch::Contains("\"empty_classes\": [\"empty\"]") &&
                          Catch::Contains("a/notes.txt") && Catch::Contains("b/anim.gif") &&
                          Catch::Contains("a/truncated.jpg") && Catch::Contains("b/marker.jpg"));
  std::size_t listed = 0;
  for (std::size_t at = sidecar.find("\"file\": "); at != std::string::npos;
       at = sidecar.find("\"file\": ", at + 1)) {
    ++listed;
  }
  CHECK(listed == 2);  // exactly the planted files
  const Reader reader(output);
  REQUIRE(reader.num_samples() == 8);
  for (std::uint64_t i = 0; i < 8; ++i) {
    CHECK(std::get<std::int64_t>(reader.decode(i, 1)) == static_cast<std::int64_t>(i / 4));
  }
  CHECK(test::run_cli("inspect " + output + " --verify", out) == 0);
}

TEST_CASE("a file of another format under an image name is refused before any decoder sees it",
          "[cli][bad_source]") {
  test::TempDir dir;
  fs::create_directories(dir.file("img/a"));
  test::write_file(dir.file("img/a/good.jpg"), encode_jpeg(test::gradient_image(30, 20, 1), 90));
  // A damaged DICOM file (found by fuzzing: GDCM, which OpenCV's imdecode tries, asserted and
  // aborted the writer on it) and a JPEG 2000 signature, named as PNG and TIFF.
  const std::vector<std::uint8_t> dicom = test::read_file(
      std::string(FFCV_SOURCE_DIR) + "/tests/fuzz/regressions/sources/dicom-aborts-gdcm");
  test::write_file(dir.file("img/a/scan.png"),
                   std::vector<std::uint8_t>(dicom.begin() + 4, dicom.end()));
  test::write_file(dir.file("img/a/photo.tif"),
                   {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0d, 0x0a, 0x87, 0x0a, 0, 0, 0, 0});
  std::string out;
  CHECK(test::run_cli("write folder " + dir.file("img") + " --output " + dir.file("o.beton") +
                          " --on-bad-image skip --quiet",
                      out) == 0);
  INFO(out);
  const Reader reader(dir.file("o.beton"));
  CHECK(reader.num_samples() == 1);
  const std::string sources = test::text_of(dir.file("o.beton.sources.json"));
  CHECK_THAT(sources, Catch::Contains("scan.png") && Catch::Contains("photo.tif") &&
                          Catch::Contains("not a JPEG, PNG, BMP, PNM, TIFF or WebP file"));
}

TEST_CASE("a PNM file holding DICOM's signature goes to the PNM decoder only, under any name",
          "[cli][bad_source]") {
  // Found by fuzzing: it starts "P4" (PNM) and holds "DICM" at byte 128, so OpenCV's imdecode
  // handed it to its DICOM decoder, which asserted and aborted the writer, leaving its temp file.
  const std::vector<std::uint8_t> input =
      test::read_file(std::string(FFCV_SOURCE_DIR) +
                      "/tests/fuzz/regressions/sources/pnm-with-dicom-signature-aborts-gdcm");
  const std::vector<std::uint8_t> file(input.begin() + 4, input.end());
  REQUIRE(file.size() == 135);
  REQUIRE(std::string(file.begin() + 128, file.begin() + 132) == "DICM");
  test::TempDir dir;
  fs::create_directories(dir.file("img/a"));
  test::write_file(dir.file("img/a/good.jpg"), encode_jpeg(test::gradient_image(30, 20, 1), 90));
  const std::vector<std::string> names = {"x.png", "x.jpg", "x.bmp", "x.pnm"};
  for (const std::string& name : names) test::write_file(dir.file("img/a/" + name), file);
  std::string out;
  REQUIRE(test::run_cli("write folder " + dir.file("img") + " --output " + dir.file("o.beton") +
                            " --on-bad-image skip",
                        out) == 0);
  INFO(out);
  CHECK(Reader(dir.file("o.beton")).num_samples() == 1);
  const std::string sources = test::text_of(dir.file("o.beton.sources.json"));
  for (const std::string& name : names) {
    CHECK_THAT(out, Catch::Contains("skipped " + dir.file("img/a/" + name)));
    CHECK_THAT(sources, Catch::Contains("a/" + name));
  }
  CHECK_THAT(sources, Catch::Contains("PNM") && Catch::Contains("not followed by whitespace"));
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    CHECK_THAT(entry.path().filename().string(), !Catch::Contains("tmp"));
  }
}

TEST_CASE("a FIFO or a device is refused by name, never waited on or read for ever",
          "[cli][bad_input]") {
  test::TempDir dir;
  std::string out;
  REQUIRE(std::system(("mkfifo " + dir.file("pipe.beton")).c_str()) == 0);
  fs::create_symlink("/dev/zero", dir.file("zero.beton"));
  // `timeout`: a regression fails here instead of hanging the suite.
  CHECK(test::run_cli("inspect " + dir.file("pipe.beton"), out, "timeout 60 ") == 1);
  CHECK_THAT(out, Catch::Contains("pipe.beton") && Catch::Contains("named pipe (FIFO)"));
  CHECK(test::run_cli("bench " + dir.file("zero.beton"), out, "timeout 60 ") == 1);
  CHECK_THAT(out, Catch::Contains("zero.beton") && Catch::Contains("character device"));
  // A source image: the same refusal (COCO images are read by the names the annotations give).
  REQUIRE(std::system(("mkfifo " + dir.file("pipe.jpg")).c_str()) == 0);
  CHECK_THROWS_WITH(tools::read_image_value(dir.file("pipe.jpg")),
                    Catch::Contains("pipe.jpg") && Catch::Contains("not a regular file"));
  tools::start_reading(dir.file("pipe.jpg"));  // the read-ahead hint returns at once too
  // In a folder: left out and listed with the reason, the other images written.
  make_folder(dir.file("images"));
  REQUIRE(std::system(("mkfifo " + dir.file("images/a/fifo.jpg")).c_str()) == 0);
  fs::create_symlink("/dev/zero", dir.file("images/b/zero.jpg"));
  CHECK(test::run_cli("write folder " + dir.file("images") + " --output " + dir.file("f.beton") +
                          " --on-bad-image skip --quiet",
                      out, "timeout 120 ") == 0);
  CHECK_THAT(test::text_of(dir.file("f.beton.sources.json")),
             Catch::Contains("fifo.jpg (not a regular file)") &&
                 Catch::Contains("zero.jpg (not a regular file)"));
}
