// Bad files: truncation at many offsets and flipped bytes in every table. Each must either be
// refused with one FormatError naming the file, or (for bytes the format cannot check, such as
// a label value) read without crashing. Never a crash, never a hang.
#include <catch2/catch.hpp>
#include <fstream>

#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::TempDir;

namespace {

// A small file with every kind of column: image (raw and jpg), int, ndarray, json.
std::vector<std::uint8_t> make_reference_file(const std::string& path) {
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kProportion;
  const std::vector<NamedField> fields = {
      {"image", std::make_shared<RgbImageField>(options)},
      {"label", std::make_shared<IntField>()},
      {"vector",
       std::make_shared<NdArrayField>(DType::parse("<f4"), std::vector<std::uint64_t>{6})},
      {"meta", std::make_shared<JsonField>()}};
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    NdArray vector{
        DType::parse("<f4"), {6}, std::vector<std::uint8_t>(24, static_cast<std::uint8_t>(i))};
    return {test::gradient_image(20 + static_cast<int>(i), 10 + static_cast<int>(i % 7), i),
            static_cast<std::int64_t>(i), vector, JsonText{"{\"i\": " + std::to_string(i) + "}"}};
  };
  DatasetWriter(path, fields, {.page_size = 1u << 21, .seed = 3})
      .write(test::FunctionSource(24, make));
  return test::read_file(path);
}

// Opens `path` and decodes every value. Returns "" when all went well, else the error text.
std::string open_and_decode(const std::string& path) {
  try {
    const Reader reader(path);
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      for (std::size_t f = 0; f < reader.fields().size(); ++f) reader.decode(i, f);
    }
    return "";
  } catch (const FormatError& error) {
    return error.what();
  }
}

}  // namespace

TEST_CASE("the reference file reads back whole", "[reader]") {
  TempDir dir;
  make_reference_file(dir.file("ok.beton"));
  CHECK(open_and_decode(dir.file("ok.beton")) == "");
}

TEST_CASE("truncation anywhere is a clear FormatError", "[reader][errors]") {
  TempDir dir;
  const std::vector<std::uint8_t> bytes = make_reference_file(dir.file("ok.beton"));
  const Reader reader(dir.file("ok.beton"));
  std::vector<std::size_t> cuts = {0, 1, 23, 24, 25, 24 + 1041, 24 + 4 * 1041 - 1};
  for (std::size_t c = reader.metadata_offset(); c < reader.metadata_end(); c += 37)
    cuts.push_back(c);
  for (std::size_t c = reader.metadata_end(); c < bytes.size(); c += bytes.size() / 97)
    cuts.push_back(c);
  for (std::size_t k = 1; k <= 30; ++k) cuts.push_back(bytes.size() - k);
  const std::string path = dir.file("cut.beton");
  for (const std::size_t cut : cuts) {
    test::write_file(path, std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + cut));
    INFO("truncated to " << cut << " bytes");
    const std::string error = open_and_decode(path);
    CHECK_THAT(error, Catch::Contains(path));
  }
}

TEST_CASE("trailing bytes after the allocation table are refused", "[reader][errors]") {
  TempDir dir;
  std::vector<std::uint8_t> bytes = make_reference_file(dir.file("ok.beton"));
  bytes.push_back(0);
  test::write_file(dir.file("long.beton"), bytes);
  CHECK_THAT(open_and_decode(dir.file("long.beton")), Catch::Contains("24-byte entries"));
}

TEST_CASE("header corruption is named precisely", "[reader][errors]") {
  TempDir dir;
  const std::vector<std::uint8_t> bytes = make_reference_file(dir.file("ok.beton"));
  struct Case {
    std::size_t offset;
    std::uint8_t value;
    const char* message;
  };
  const std::vector<Case> cases = {
      {0, 3, "format version 3"},   {2, 0, "no fields"},
      {4, 1, "not a power of two"}, {8, 0xff, "sample 24 field 'image'"},
      {15, 0x10, "does not fit"},   {16, 0x01, "24-byte entries"},
      {23, 0x01, "outside"},        {24, 9, "unknown type id 9"},
      {24, 255, "custom field"},
  };
  const std::string path = dir.file("bad.beton");
  for (const Case& c : cases) {
    std::vector<std::uint8_t> corrupt = bytes;
    corrupt[c.offset] = c.value;
    test::write_file(path, corrupt);
    INFO("byte " << c.offset << " set to " << int(c.value));
    CHECK_THAT(open_and_decode(path), Catch::Contains(c.message) && Catch::Contains(path));
  }
  std::vector<std::uint8_t> renamed = bytes;  // the second field renamed to the first's name
  std::copy_n(bytes.begin() + 25, 16, renamed.begin() + 25 + 1041);
  test::write_file(path, renamed);
  CHECK_THAT(open_and_decode(path), Catch::Contains("two fields are named 'image'"));
}

TEST_CASE("flipped bits in descriptors, metadata and the allocation table never crash",
          "[reader][errors]") {
  TempDir dir;
  const std::vector<std::uint8_t> bytes = make_reference_file(dir.file("ok.beton"));
  const Reader reader(dir.file("ok.beton"));
  const std::uint64_t table = reader.header().alloc_table_ptr;
  std::vector<std::size_t> offsets;
  for (std::size_t o = 0; o < reader.metadata_end(); o += 3) offsets.push_back(o);
  for (std::size_t o = table; o < bytes.size(); ++o) offsets.push_back(o);
  // One copy of the file, each flip written into it in place and undone after (the file is a
  // 2 MiB page: writing it whole for each of some 4,000 flips was most of the test's time).
  const std::string path = dir.file("flip.beton");
  test::write_file(path, bytes);
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  const auto put = [&](std::size_t offset, std::uint8_t value) {
    file.seekp(static_cast<std::streamoff>(offset));
    file.put(static_cast<char>(value));
    file.flush();
    REQUIRE(file.good());
  };
  std::size_t refused = 0;
  for (const std::size_t offset : offsets) {
    for (const std::uint8_t mask : {0x01, 0x80}) {
      put(offset, bytes[offset] ^ mask);
      INFO("byte " << offset << " xor " << int{mask});
      const std::string error = open_and_decode(path);
      if (!error.empty()) {
        ++refused;
        CHECK_THAT(error, Catch::Contains(path));
      }
    }
    put(offset, bytes[offset]);
  }
  file.close();
  CHECK(test::read_file(path) == bytes);
  // Most flips land in checked structure (pointers, sizes, modes, the table); labels, float
  // payload pointers' low bits and unused descriptor bytes are legitimately unchecked.
  CHECK(refused > offsets.size() / 4);
}

TEST_CASE("a pointer to the wrong sample's data or a wrong size is refused", "[reader][errors]") {
  TempDir dir;
  const std::vector<std::uint8_t> bytes = make_reference_file(dir.file("ok.beton"));
  const Reader reader(dir.file("ok.beton"));
  // Point sample 0's vector at sample 1's vector.
  const std::uint64_t column0 =
      reader.column(0, 2) - reader.column(0, 0) + reader.metadata_offset();
  const std::uint64_t column1 = column0 + reader.layout().record_size;
  std::vector<std::uint8_t> corrupt = bytes;
  std::copy_n(bytes.begin() + column1, 8, corrupt.begin() + column0);
  test::write_file(dir.file("swap.beton"), corrupt);
  CHECK_THAT(open_and_decode(dir.file("swap.beton")), Catch::Contains("owned by sample 1"));
  // Change sample 0's raw image width: the payload no longer matches width*height*3.
  corrupt = bytes;
  const std::uint64_t image0 = reader.metadata_offset();
  if (corrupt[image0] == 1) {  // raw
    corrupt[image0 + 1] += 1;
    test::write_file(dir.file("size.beton"), corrupt);
    CHECK_THAT(open_and_decode(dir.file("size.beton")), Catch::Contains("the field requires"));
  }
}

TEST_CASE("files that are not .beton files are refused", "[reader][errors]") {
  TempDir dir;
  test::write_file(dir.file("empty.beton"), {});
  CHECK_THAT(open_and_decode(dir.file("empty.beton")), Catch::Contains("too short"));
  CHECK_THROWS_AS(Reader(dir.file("absent.beton")), IoError);
  CHECK_THROWS_AS(Reader(dir.path()), IoError);
}

TEST_CASE("an empty allocation sharing its pointer is refused with that explanation",
          "[reader][errors]") {
  // Python FFCV writes an empty Bytes value as a zero-size allocation at the same pointer as
  // the next allocation; no reader can tell the two apart by pointer.
  TempDir dir;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> { return {Bytes(5 + i, 1)}; };
  DatasetWriter(dir.file("b.beton"), {{"blob", std::make_shared<BytesField>()}})
      .write(test::FunctionSource(2, make));
  std::vector<std::uint8_t> bytes = test::read_file(dir.file("b.beton"));
  const std::uint64_t table = Reader(dir.file("b.beton")).header().alloc_table_ptr;
  std::copy_n(bytes.begin() + table + 24 + 8, 8, bytes.begin() + table + 8);  // ptr of sample 1
  std::fill_n(bytes.begin() + table + 16, 8, 0);                              // size 0
  test::write_file(dir.file("empty.beton"), bytes);
  CHECK_THAT(open_and_decode(dir.file("empty.beton")),
             Catch::Contains("allocation 0 of sample 0 is empty"));
}
