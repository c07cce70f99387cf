// The byte layout of headers, descriptors and metadata records against the layouts numpy
// produces for FFCV (reference values computed with numpy's align=True structs).
#include <catch2/catch.hpp>

#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/format/dtype.hpp"
#include "ffcv/format/format.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;

TEST_CASE("header encodes as FFCV's 24-byte little-endian struct", "[format]") {
  Header header;
  header.num_fields = 2;
  header.page_size = 1u << 23;
  header.num_samples = 3;
  header.alloc_table_ptr = 0x1800000;
  const std::array<std::uint8_t, 24> expected = {0x02, 0x00, 0x02, 0x00, 0x00, 0x00, 0x80, 0x00,
                                                 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                                 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00};
  CHECK(header.encode() == expected);
  const Header back = Header::decode(expected.data());
  CHECK(back.alloc_table_ptr == 0x1800000);
  CHECK(back.num_samples == 3);
}

TEST_CASE("metadata records follow numpy align=True layouts", "[format]") {
  const ColumnType rgb = RgbImageField().column_type();
  const ColumnType integer = IntField().column_type();
  const ColumnType real = FloatField().column_type();
  const ColumnType bytes = BytesField().column_type();
  const ColumnType array = NdArrayField(DType::parse("<f4"), {4}).column_type();
  struct Case {
    std::vector<ColumnType> columns;
    std::vector<std::size_t> offsets;
    std::size_t size;
  };
  const std::vector<Case> cases = {
      {{rgb, integer}, {0, 16}, 24},
      {{integer, rgb}, {0, 8}, 24},
      {{rgb}, {0}, 13},
      {{real, integer}, {0, 8}, 16},
      {{rgb, rgb, integer}, {0, 13, 32}, 40},
      {{bytes, array, integer}, {0, 16, 24}, 32},
      {{rgb, bytes}, {0, 13}, 29},
  };
  for (const Case& c : cases) {
    const MetadataLayout layout = MetadataLayout::compute(c.columns);
    CHECK(layout.column_offsets == c.offsets);
    CHECK(layout.record_size == c.size);
  }
}

TEST_CASE("an RGB metadata record matches the reference bytes", "[format]") {
  std::array<std::uint8_t, 13> column{};
  ImageMetadata{StoredImageMode::kJpg, 500, 375, 0x800000}.store(column.data());
  const std::array<std::uint8_t, 13> expected = {0x00, 0xf4, 0x01, 0x77, 0x01, 0x00, 0x00,
                                                 0x80, 0x00, 0x00, 0x00, 0x00, 0x00};
  CHECK(column == expected);
}

TEST_CASE("field descriptors pad names with NUL and keep 16-byte names whole", "[format]") {
  FieldDescriptor descriptor{2, "image", {}};
  const auto bytes = descriptor.encode();
  CHECK(bytes.size() == 1041);
  CHECK(bytes[0] == 2);
  CHECK(std::string(bytes.begin() + 1, bytes.begin() + 6) == "image");
  CHECK(bytes[6] == 0);
  const FieldDescriptor full{1, "abcdefghijklmnop", {}};
  CHECK(FieldDescriptor::decode(full.encode().data()).name == "abcdefghijklmnop");
}

TEST_CASE("NDArray argument blob holds the shape and numpy's descr JSON", "[format]") {
  const NdArrayField field(DType::parse("float32"), {3, 224, 224});
  const FieldArgs args = field.args();
  CHECK(args[0] == 3);
  CHECK(args[8] == 224);
  CHECK(args[24] == 0);
  CHECK(args[256] == 13);  // strlen("[[\"\", \"<f4\"]]")
  CHECK(std::string(args.begin() + 264, args.begin() + 277) == "[[\"\", \"<f4\"]]");
  const NdArrayField back = NdArrayField::from_args(args);
  CHECK(back.shape() == std::vector<std::uint64_t>{3, 224, 224});
  CHECK(back.dtype().typestr() == "<f4");
  CHECK(back.element_bytes() == 3 * 224 * 224 * 4);
}

TEST_CASE("numpy typestrings parse and print", "[format]") {
  CHECK(DType::parse("|u1").typestr() == "|u1");
  CHECK(DType::parse("uint8").typestr() == "|u1");
  CHECK(DType::parse("bool").typestr() == "|b1");
  CHECK(DType::parse(">f4").typestr() == ">f4");
  CHECK(DType::parse("=i8").typestr() == "<i8");
  CHECK(DType::parse("<c16").itemsize == 16);
  CHECK(DType::from_descr_json("[[\"\", \"<f2\"]]").typestr() == "<f2");
  CHECK_THROWS_AS(DType::parse("<f3"), ConfigError);
  CHECK_THROWS_AS(DType::parse("O"), ConfigError);
  CHECK_THROWS_AS(DType::from_descr_json("[[\"a\", \"<f4\"], [\"b\", \"<i4\"]]"), ConfigError);
}

TEST_CASE("NDArray shapes FFCV cannot represent are refused", "[format]") {
  CHECK_THROWS_AS(NdArrayField(DType::parse("<f4"), {}), ConfigError);
  CHECK_THROWS_AS(NdArrayField(DType::parse("<f4"), {4, 0}), ConfigError);
  CHECK_THROWS_AS(NdArrayField(DType::parse("<f4"), std::vector<std::uint64_t>(33, 1)),
                  ConfigError);
}

TEST_CASE("page sizes must be powers of two within FFCV's bounds", "[format]") {
  CHECK_NOTHROW(check_page_size(1u << 21));
  CHECK_NOTHROW(check_page_size(1u << 31));
  CHECK_THROWS_AS(check_page_size(1u << 20), ConfigError);
  CHECK_THROWS_AS(check_page_size(3u << 21), ConfigError);
  CHECK_THROWS_AS(check_page_size(std::uint64_t{1} << 32), ConfigError);
}
