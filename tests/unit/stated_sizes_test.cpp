// Sizes a file states about itself, other than .npy headers (npy_header_test.cpp): an IDX
// header's dimensions and a .beton NDArray field's shape. Products that wrap around 64 bits
// must be refused, not taken modulo 2^64.
#include <catch2/catch.hpp>

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/format/format.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "sources/idx_source.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::TempDir;

namespace {

// An IDX file of unsigned bytes: magic, the dimensions big-endian, then `data`.
std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims,
                                    const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> bytes{0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  for (const std::uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      bytes.push_back(static_cast<std::uint8_t>(dim >> shift));
    }
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

}  // namespace

TEST_CASE("IDX dimensions whose product wraps around 64 bits are refused", "[sources][bad_input]") {
  TempDir dir;
  test::write_file(dir.file("labels"), idx_bytes({2}, {3, 4}));
  // 2^31 x 2^31 x 4 = 2^64 pixels: modulo 2^64, exactly the 0 bytes the file holds.
  test::write_file(dir.file("wrapped"), idx_bytes({1u << 31, 1u << 31, 4}, {}));
  CHECK_THROWS_WITH(tools::IdxSource(dir.file("wrapped"), dir.file("labels")),
                    Catch::Contains("wrapped") && Catch::Contains("more than 2^64"));
  // Sides a .beton cannot store, and empty images.
  test::write_file(dir.file("wide"), idx_bytes({2, 1, 70000}, std::vector<std::uint8_t>(140000)));
  CHECK_THROWS_WITH(tools::IdxSource(dir.file("wide"), dir.file("labels")),
                    Catch::Contains("1x70000") && Catch::Contains("1 to 65535"));
  test::write_file(dir.file("empty"), idx_bytes({2, 0, 5}, {}));
  CHECK_THROWS_WITH(tools::IdxSource(dir.file("empty"), dir.file("labels")),
                    Catch::Contains("0x5"));
  // A well-formed pair reads.
  test::write_file(dir.file("images"),
                   idx_bytes({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  const tools::IdxSource source(dir.file("images"), dir.file("labels"));
  CHECK(source.size() == 2);
  CHECK(std::get<RgbImage>(source.load(1)[0]).pixels[0] == 7);
}

TEST_CASE("a .beton NDArray shape whose byte count wraps around 64 bits is refused", "[reader]") {
  TempDir dir;
  const NdArrayField field(DType::parse("<f4"), {6});
  test::FunctionSource source(3, [](std::uint64_t i) -> std::vector<FieldValue> {
    return {NdArray{
        DType::parse("<f4"), {6}, std::vector<std::uint8_t>(24, static_cast<std::uint8_t>(i))}};
  });
  DatasetWriter(dir.file("ok.beton"), {{"x", std::make_shared<NdArrayField>(field)}}).write(source);
  REQUIRE(Reader(dir.file("ok.beton")).num_samples() == 3);
  // The shape (2^62 + 6) of 4-byte floats: 2^64 + 24 bytes, 24 modulo 2^64, the size stored.
  std::vector<std::uint8_t> bytes = test::read_file(dir.file("ok.beton"));
  const std::size_t args = kHeaderSize + 1 + kFieldNameSize;
  REQUIRE(load_le<std::uint64_t>(&bytes[args]) == 6);
  store_le<std::uint64_t>(&bytes[args], (std::uint64_t{1} << 62) + 6);
  test::write_file(dir.file("wrapped.beton"), bytes);
  CHECK_THROWS_WITH(Reader(dir.file("wrapped.beton")),
                    Catch::Contains("wrapped.beton") && Catch::Contains("64 bits"));
  CHECK_THROWS_AS(Reader(dir.file("wrapped.beton")), FormatError);
}
