// .npy headers as a file may state them: sizes that overflow 64 bits, negative dimensions,
// complex dtypes, uint64 targets an Int cannot hold, and big-endian arrays, through map_npy and
// `ffcv write npy`.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>

#include "ffcv/format/npy_array.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::TempDir;

namespace {

// A version 1.0 .npy file with the header dict `dict` (padded as numpy pads it) and `data`.
std::vector<std::uint8_t> npy_bytes(const std::string& dict,
                                    const std::vector<std::uint8_t>& data) {
  std::string header = dict;
  const std::size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::vector<std::uint8_t> bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes.push_back(static_cast<std::uint8_t>(header.size() & 0xff));
  bytes.push_back(static_cast<std::uint8_t>(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::string dict(const std::string& descr, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

// `value`'s bytes, most significant first (big-endian), from its bit pattern.
template <typename T>
void append_big_endian(std::vector<std::uint8_t>& out, T value) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint16_t>>;
  const Bits bits = std::bit_cast<Bits>(value);
  for (int shift = 8 * static_cast<int>(sizeof(T)) - 8; shift >= 0; shift -= 8) {
    out.push_back(static_cast<std::uint8_t>(bits >> shift));
  }
}

template <typename T>
void append_little_endian(std::vector<std::uint8_t>& out, T value) {
  out.resize(out.size() + sizeof(T));
  store_le(&out[out.size() - sizeof(T)], value);
}

// Runs `ffcv write npy`; returns its status.
int write_npy_cli(const TempDir& dir, const std::string& features, const std::string& targets,
                  std::string& out) {
  return test::run_cli("write npy --features " + dir.file(features) + " --targets " +
                           dir.file(targets) + " --output " + dir.file("out.beton"),
                       out);
}

// The names in `dir`: what a failed write must not leave behind (no output, no temporary).
std::vector<std::string> names_in(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::uint8_t> int64_targets(std::uint64_t rows) {
  std::vector<std::uint8_t> data;
  for (std::uint64_t i = 0; i < rows; ++i) append_little_endian<std::int64_t>(data, 3 * i);
  return data;
}

}  // namespace

TEST_CASE("npy shapes whose byte count overflows 64 bits are refused, by write npy too",
          "[npy][bad_input]") {
  TempDir dir;
  test::write_file(dir.file("y.npy"), npy_bytes(dict("<i8", "(4,)"), int64_targets(4)));
  // 2^62 rows of 4 floats: 2^66 bytes, which wraps to 0 = the data the file holds.
  test::write_file(dir.file("rows.npy"), npy_bytes(dict("<f4", "(4611686018427387904, 4)"), {}));
  // No rows, but a row of 2^62 x 8 bytes.
  test::write_file(dir.file("row.npy"), npy_bytes(dict("<f8", "(0, 4611686018427387904, 1)"), {}));
  // A dimension beyond 64 bits.
  test::write_file(dir.file("digits.npy"), npy_bytes(dict("<f4", "(18446744073709551617,)"), {}));
  for (const std::string name : {"rows.npy", "row.npy", "digits.npy"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH(map_npy(dir.file(name)),
                      Catch::Contains(dir.file(name)) && Catch::Contains("64 bits"));
    const std::vector<std::string> before = names_in(dir);
    std::string out;
    CHECK(write_npy_cli(dir, name, "y.npy", out) == 1);
    CHECK_THAT(out, Catch::Contains(name) && Catch::Contains("64 bits"));
    CHECK(names_in(dir) == before);
  }
  // The same shapes written with a small first dimension still read.
  std::vector<std::uint8_t> data(4 * 4 * 4);
  test::write_file(dir.file("fine.npy"), npy_bytes(dict("<f4", "(4, 4)"), data));
  CHECK(map_npy(dir.file("fine.npy")).row_bytes() == 16);
}

TEST_CASE("npy shapes with a negative or non-numeric dimension are refused", "[npy][bad_input]") {
  TempDir dir;
  test::write_file(dir.file("y.npy"), npy_bytes(dict("<i8", "(3,)"), int64_targets(3)));
  // (-3, 2) of one-byte values: read as (3, 2), it would match the 6 data bytes.
  test::write_file(dir.file("negative.npy"),
                   npy_bytes(dict("|u1", "(-3, 2)"), std::vector<std::uint8_t>(6, 7)));
  CHECK_THROWS_WITH(map_npy(dir.file("negative.npy")),
                    Catch::Contains("negative.npy") && Catch::Contains("negative dimension"));
  std::string out;
  CHECK(write_npy_cli(dir, "negative.npy", "y.npy", out) == 1);
  CHECK_THAT(out, Catch::Contains("negative dimension"));
  CHECK_FALSE(std::filesystem::exists(dir.file("out.beton")));

  test::write_file(dir.file("word.npy"),
                   npy_bytes(dict("|u1", "(3, two)"), std::vector<std::uint8_t>(6, 7)));
  CHECK_THROWS_WITH(map_npy(dir.file("word.npy")), Catch::Contains("not a number"));
  test::write_file(dir.file("open.npy"),
                   npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2", {}));
  CHECK_THROWS_WITH(map_npy(dir.file("open.npy")), Catch::Contains("not closed"));
  // numpy's spellings of a scalar, a vector and a matrix.
  test::write_file(dir.file("scalar.npy"),
                   npy_bytes(dict("<f8", "()"), std::vector<std::uint8_t>(8)));
  CHECK(map_npy(dir.file("scalar.npy")).shape.empty());
  test::write_file(dir.file("vector.npy"),
                   npy_bytes(dict("|u1", "(5,)"), std::vector<std::uint8_t>(5)));
  CHECK(map_npy(dir.file("vector.npy")).shape == std::vector<std::uint64_t>{5});
  test::write_file(dir.file("matrix.npy"),
                   npy_bytes(dict("|u1", "(2,3)"), std::vector<std::uint8_t>(6)));
  CHECK(map_npy(dir.file("matrix.npy")).shape == std::vector<std::uint64_t>{2, 3});
}

TEST_CASE("npy complex arrays are refused", "[npy][bad_input]") {
  TempDir dir;
  test::write_file(dir.file("y.npy"), npy_bytes(dict("<i8", "(2,)"), int64_targets(2)));
  for (const std::string descr : {"<c8", "<c16"}) {
    CAPTURE(descr);
    const std::size_t item = descr == "<c8" ? 8 : 16;
    test::write_file(dir.file("x.npy"),
                     npy_bytes(dict(descr, "(2, 3)"), std::vector<std::uint8_t>(2 * 3 * item)));
    CHECK_THROWS_WITH(map_npy(dir.file("x.npy")),
                      Catch::Contains("x.npy") && Catch::Contains("complex"));
    std::string out;
    CHECK(write_npy_cli(dir, "x.npy", "y.npy", out) == 1);
    CHECK_THAT(out, Catch::Contains("complex dtype '" + descr + "'"));
    CHECK_FALSE(std::filesystem::exists(dir.file("out.beton")));
  }
}

TEST_CASE("npy uint64 targets beyond int64 are refused naming the row, the rest kept exact",
          "[npy][bad_input]") {
  TempDir dir;
  const std::uint64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
  test::write_file(dir.file("x.npy"),
                   npy_bytes(dict("|u1", "(3, 2)"), std::vector<std::uint8_t>(6)));
  for (const char order : {'<', '>'}) {
    CAPTURE(order);
    std::filesystem::remove(dir.file("out.beton"));
    const auto targets = [&](std::uint64_t last) {
      std::vector<std::uint8_t> data;
      for (const std::uint64_t value : {std::uint64_t{0}, std::uint64_t{12345}, last}) {
        if (order == '<') append_little_endian(data, value);
        if (order == '>') append_big_endian(data, value);
      }
      return npy_bytes(dict(std::string(1, order) + "u8", "(3,)"), data);
    };
    test::write_file(dir.file("max.npy"), targets(std::numeric_limits<std::uint64_t>::max()));
    std::string out;
    CHECK(write_npy_cli(dir, "x.npy", "max.npy", out) == 1);
    CHECK_THAT(out, Catch::Contains("max.npy' row 2 holds 18446744073709551615"));
    CHECK_FALSE(std::filesystem::exists(dir.file("out.beton")));

    // 2^63 - 1, the largest an Int holds, is stored exactly.
    test::write_file(dir.file("fits.npy"), targets(kMaxInt));
    REQUIRE(write_npy_cli(dir, "x.npy", "fits.npy", out) == 0);
    const Reader reader(dir.file("out.beton"));
    CHECK(std::get<std::int64_t>(reader.decode(1, 1)) == 12345);
    CHECK(std::get<std::int64_t>(reader.decode(2, 1)) == static_cast<std::int64_t>(kMaxInt));
  }
}

TEST_CASE("write npy stores big-endian arrays little-endian, values unchanged", "[npy][sources]") {
  TempDir dir;
  const std::uint64_t rows = 4;
  // Features of each big-endian dtype, with their values; targets >i4 (an Int) and >f8 (a Float).
  const std::vector<float> f4{1.5f, -2.25f, 3.0e-8f, 65504.0f, -0.0f, 7.0f, 1.0e30f, -1.0f};
  const std::vector<double> f8{0.1, -1.0e300, 2.5, 3.0, 4.0, -5.5, 6.0e-300, 7.125};
  const std::vector<std::int16_t> i2{-32768, 32767, 1, -1, 256, -257, 0, 12345};
  const std::vector<std::uint16_t> f2{0x3c00, 0xc000, 0x7bff, 0x0001, 0x8400, 0x3555, 0, 0x4248};
  const std::vector<std::int32_t> target_i4{-7, 2147483647, -2147483647 - 1, 65536};
  const std::vector<double> target_f8{0.5, -1.0e-10, 1.0e10, 3.25};
  std::vector<std::uint8_t> data;
  for (float v : f4) append_big_endian(data, v);
  test::write_file(dir.file("f4.npy"), npy_bytes(dict(">f4", "(4, 2)"), data));
  data.clear();
  for (double v : f8) append_big_endian(data, v);
  test::write_file(dir.file("f8.npy"), npy_bytes(dict(">f8", "(4, 2)"), data));
  data.clear();
  for (std::int16_t v : i2) append_big_endian(data, v);
  test::write_file(dir.file("i2.npy"), npy_bytes(dict(">i2", "(4, 1, 2)"), data));
  data.clear();
  for (std::uint16_t v : f2) append_big_endian(data, v);
  test::write_file(dir.file("f2.npy"), npy_bytes(dict(">f2", "(4, 2)"), data));
  data.clear();
  for (std::int32_t v : target_i4) append_big_endian(data, v);
  test::write_file(dir.file("ti4.npy"), npy_bytes(dict(">i4", "(4,)"), data));
  data.clear();
  for (double v : target_f8) append_big_endian(data, v);
  test::write_file(dir.file("tf8.npy"), npy_bytes(dict(">f8", "(4,)"), data));

  const auto check_features = [&](const std::string& name, const std::string& typestr,
                                  const std::vector<std::uint8_t>& expected_le) {
    CAPTURE(name);
    std::string out;
    REQUIRE(write_npy_cli(dir, name, "ti4.npy", out) == 0);
    const Reader reader(dir.file("out.beton"));
    std::vector<std::uint8_t> stored;
    for (std::uint64_t i = 0; i < rows; ++i) {
      const NdArray row = std::get<NdArray>(reader.decode(i, 0));
      CHECK(row.dtype.typestr() == typestr);
      stored.insert(stored.end(), row.bytes.begin(), row.bytes.end());
      CHECK(std::get<std::int64_t>(reader.decode(i, 1)) == target_i4[i]);
    }
    CHECK(stored == expected_le);
  };
  std::vector<std::uint8_t> expected;
  for (float v : f4) append_little_endian(expected, v);
  check_features("f4.npy", "<f4", expected);
  expected.clear();
  for (double v : f8) append_little_endian(expected, v);
  check_features("f8.npy", "<f8", expected);
  expected.clear();
  for (std::int16_t v : i2) append_little_endian(expected, v);
  check_features("i2.npy", "<i2", expected);
  expected.clear();
  for (std::uint16_t v : f2) append_little_endian(expected, v);
  check_features("f2.npy", "<f2", expected);

  std::string out;
  REQUIRE(write_npy_cli(dir, "f4.npy", "tf8.npy", out) == 0);
  const Reader reader(dir.file("out.beton"));
  CHECK(reader.fields()[1].field->type_name() == "Float");
  for (std::uint64_t i = 0; i < rows; ++i) {
    CHECK(std::get<double>(reader.decode(i, 1)) == target_f8[i]);
  }
}

TEST_CASE("write npy big-endian arrays read back as numpy's little-endian conversion",
          "[npy][sources]") {
  const std::string python = FFCV_PYTHON;
  if (python.empty() || !std::filesystem::exists(python) ||
      std::system(("'" + python + "' -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
    test::skip_test("no Python with numpy at '" + python + "'");
    return;
  }
  TempDir dir;
  const std::vector<std::string> kinds{"f2", "f4", "f8", "i2", "i4", "i8", "u2", "u4", "u8"};
  // numpy writes each array big-endian, and its own conversion to little-endian beside it.
  const std::string script =
      "import numpy as np\n"
      "rng = np.random.default_rng(5)\n"
      "for kind in " +
      std::string("['f2', 'f4', 'f8', 'i2', 'i4', 'i8', 'u2', 'u4', 'u8']") +
      ":\n"
      "    x = rng.standard_normal((6, 3)) * (1000 if kind[0] != 'u' else 0) + "
      "rng.integers(0, 60000, (6, 3))\n"
      "    big = x.astype('>' + kind)\n"
      "    np.save('" +
      dir.path() +
      "/big_' + kind + '.npy', big)\n"
      "    np.save('" +
      dir.path() +
      "/little_' + kind + '.npy', big.astype('<' + kind))\n"
      "np.save('" +
      dir.path() + "/y.npy', np.arange(6, dtype='>i8') - 3)\n";
  test::write_file(dir.file("make.py"), std::vector<std::uint8_t>(script.begin(), script.end()));
  REQUIRE(std::system(("'" + python + "' " + dir.file("make.py")).c_str()) == 0);
  for (const std::string& kind : kinds) {
    CAPTURE(kind);
    REQUIRE(map_npy(dir.file("big_" + kind + ".npy")).dtype.byte_order == '>');
    std::string out;
    REQUIRE(write_npy_cli(dir, "big_" + kind + ".npy", "y.npy", out) == 0);
    const NpyArray little = read_npy(dir.file("little_" + kind + ".npy"));
    const Reader reader(dir.file("out.beton"));
    std::vector<std::uint8_t> stored;
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      const NdArray row = std::get<NdArray>(reader.decode(i, 0));
      CHECK(row.dtype == little.dtype);
      stored.insert(stored.end(), row.bytes.begin(), row.bytes.end());
      CHECK(std::get<std::int64_t>(reader.decode(i, 1)) == static_cast<std::int64_t>(i) - 3);
    }
    CHECK(stored == little.data);
  }
}
