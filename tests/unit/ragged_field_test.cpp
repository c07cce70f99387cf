// RaggedNDArray fields: a varying number of rows per sample, written, read back whole, and
// loaded as packed (values + offsets) or padded (values + lengths) batches sized from the
// metadata; bad counts and pointers are refused naming the sample.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "epoch_bytes.hpp"
#include "fails_for.hpp"
#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::TempDir;

namespace {

// Sample i's rows: a count from `rows_of`, each row's bytes a function of (i, row, byte).
NdArray sample_rows(const DType& dtype, const std::vector<std::uint64_t>& inner, std::uint64_t i,
                    std::uint64_t rows) {
  std::uint64_t row_bytes = dtype.itemsize;
  for (const std::uint64_t extent : inner) row_bytes *= extent;
  NdArray array{dtype, {rows}, std::vector<std::uint8_t>(rows * row_bytes)};
  array.shape.insert(array.shape.end(), inner.begin(), inner.end());
  for (std::uint64_t b = 0; b < array.bytes.size(); ++b) {
    // Bools must stay 0 or 1 to be valid values; other types take any byte.
    const std::uint64_t value = i * 131 + b * 7 + b / row_bytes;
    array.bytes[b] = static_cast<std::uint8_t>(dtype.kind == 'b' ? value & 1 : value);
  }
  return array;
}

// Whether `size` bytes at `a` and `b` are equal (memcmp, which must not see a null pointer even
// for 0 bytes).
bool same_bytes(const void* a, const void* b, std::size_t size) {
  return size == 0 || std::memcmp(a, b, size) == 0;
}

// A file of `count` samples: "rows" (ragged) and "index" (the sample's own index).
std::string ragged_file(const TempDir& dir, const std::string& name, const DType& dtype,
                        const std::vector<std::uint64_t>& inner, std::uint64_t count,
                        const std::function<std::uint64_t(std::uint64_t)>& rows_of,
                        std::uint64_t page_size = 1u << 21) {
  const std::string path = dir.file(name);
  DatasetWriter(path,
                {{"rows", std::make_shared<RaggedNdArrayField>(dtype, inner)},
                 {"index", std::make_shared<IntField>()}},
                {.page_size = page_size, .num_workers = 2})
      .write(test::FunctionSource(count, [&](std::uint64_t i) {
        return std::vector<FieldValue>{sample_rows(dtype, inner, i, rows_of(i)),
                                       static_cast<std::int64_t>(i)};
      }));
  return path;
}

std::shared_ptr<Decoder> ragged_decoder(const std::string& layout) {
  return OpRegistry::global().make_decoder(
      "ragged", OpParams(std::map<std::string, ParamValue>{{"layout", layout}}));
}

LoaderOptions sequential(std::uint64_t batch_size, int workers = 2) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  options.drop_last = false;
  options.order.kind = OrderKind::kSequential;
  return options;
}

// Checks every batch of `loader` (outputs "rows" and "index") against sample_rows; returns the
// samples seen.
std::uint64_t check_batches(Loader& loader, const DType& dtype,
                            const std::vector<std::uint64_t>& inner,
                            const std::function<std::uint64_t(std::uint64_t)>& rows_of) {
  std::uint64_t seen = 0;
  auto epoch = loader.epoch(0);
  while (auto batch = epoch.next()) {
    const BatchTensor rows = batch->output("rows");
    const BatchTensor index = batch->output("index");
    REQUIRE(rows.layout);
    const std::uint64_t row_bytes = rows.state->byte_size();
    std::uint64_t largest = 0;
    for (std::uint64_t k = 0; k < batch->size(); ++k) {
      std::int64_t i = 0;
      std::memcpy(&i, index.data + 8 * k, 8);
      const NdArray expected = sample_rows(dtype, inner, i, rows_of(i));
      const std::uint64_t n = expected.shape[0];
      largest = std::max(largest, n);
      const std::uint8_t* first = nullptr;
      if (*rows.layout == RaggedLayout::kPacked) {
        REQUIRE(rows.offsets[k + 1] - rows.offsets[k] == static_cast<std::int64_t>(n));
        first = rows.data + rows.offsets[k] * row_bytes;
      } else {
        REQUIRE(rows.lengths[k] == static_cast<std::int64_t>(n));
        first = rows.data + k * rows.rows * row_bytes;
        // Zero rows after the sample's own, up to the batch's largest.
        const std::vector<std::uint8_t> zeros((rows.rows - n) * row_bytes, 0);
        CHECK(same_bytes(first + n * row_bytes, zeros.data(), zeros.size()));
      }
      CHECK(same_bytes(first, expected.bytes.data(), expected.bytes.size()));
      ++seen;
    }
    if (*rows.layout == RaggedLayout::kPacked) {
      CHECK(rows.offsets[0] == 0);
      CHECK(rows.rows == static_cast<std::uint64_t>(rows.offsets[batch->size()]));
      CHECK(rows.shape().front() == rows.rows);
    } else {
      CHECK(rows.rows == largest);  // padded to the batch's largest, not the dataset's
      CHECK(rows.shape() == [&] {
        std::vector<std::uint64_t> shape{batch->size(), largest};
        shape.insert(shape.end(), inner.begin(), inner.end());
        return shape;
      }());
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("ragged fields round-trip 0, 1 and many rows of every dtype", "[ragged]") {
  TempDir dir;
  const auto rows_of = [](std::uint64_t i) -> std::uint64_t {
    return i % 5 == 0 ? 0 : i % 5 == 1 ? 1 : 2 + i * 3 % 17;
  };
  for (const char* type :
       {"|u1", "|i1", "|b1", "<u2", "<i2", "<f2", "<u4", "<i4", "<f4", "<u8", "<i8", "<f8"}) {
    for (const std::vector<std::uint64_t>& inner :
         std::vector<std::vector<std::uint64_t>>{{}, {4}, {2, 3}}) {
      const DType dtype = DType::parse(type);
      INFO("dtype " << type << ", row rank " << inner.size());
      const std::string path = ragged_file(dir, "r.beton", dtype, inner, 23, rows_of);
      const Reader reader(path);
      const auto& field = dynamic_cast<const RaggedNdArrayField&>(*reader.fields()[0].field);
      CHECK(field.dtype() == dtype);
      CHECK(field.inner_shape() == inner);
      CHECK(reader.descriptors()[0].type_id == 255);
      for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
        const NdArray expected = sample_rows(dtype, inner, i, rows_of(i));
        const auto value = std::get<NdArray>(reader.decode(i, 0));
        CHECK(value.shape == expected.shape);
        CHECK(value.bytes == expected.bytes);
      }
      for (const char* layout : {"packed", "padded"}) {
        INFO("layout " << layout);
        Loader loader(path, {{"rows", "rows", ragged_decoder(layout), {}}}, sequential(4));
        CHECK(check_batches(loader, dtype, inner, rows_of) == 23);
      }
    }
  }
}

TEST_CASE("a ragged field is the default decoder's packed output", "[ragged]") {
  TempDir dir;
  const auto rows_of = [](std::uint64_t i) { return i % 3; };
  const std::string path = ragged_file(dir, "r.beton", DType::parse("<f4"), {4}, 10, rows_of);
  Loader loader(path, {}, sequential(3));
  CHECK(loader.output_layouts() ==
        std::vector<std::optional<RaggedLayout>>{RaggedLayout::kPacked, std::nullopt});
  CHECK(loader.outputs()[0].second.shape == std::vector<std::uint64_t>{4});  // one row
  CHECK(check_batches(loader, DType::parse("<f4"), {4}, rows_of) == 10);
}

TEST_CASE("ragged batches are the same bytes for any number of workers", "[ragged]") {
  TempDir dir;
  const auto rows_of = [](std::uint64_t i) { return (i * 7) % 11; };
  const std::string path = ragged_file(dir, "r.beton", DType::parse("<i8"), {}, 300, rows_of);
  for (const char* layout : {"packed", "padded"}) {
    std::vector<std::vector<std::vector<std::uint8_t>>> epochs;
    for (const int workers : {1, 3}) {
      LoaderOptions options = sequential(16, workers);
      options.order.kind = OrderKind::kRandom;
      options.order.seed = 5;
      Loader loader(path, {{"rows", "rows", ragged_decoder(layout), {}}}, options);
      epochs.push_back(test::epoch_bytes(loader, 2));
    }
    CHECK(epochs[0] == epochs[1]);
  }
}

TEST_CASE("a sample of thousands of rows, and batches whose rows exceed a page", "[ragged]") {
  TempDir dir;
  // 5,000 rows of 16 bytes per sample: 80 KB. One sample of 150,000 rows (2.4 MB) is larger
  // than the 2 MiB page asked for, which grows to 4 MiB for it; a batch of 64 holds 7.5 MB.
  const auto rows_of = [](std::uint64_t i) -> std::uint64_t {
    return i == 40 ? 150'000 : 5'000 + i;
  };
  const std::string path = ragged_file(dir, "big.beton", DType::parse("<f4"), {4}, 70, rows_of);
  CHECK(Reader(path).page_size() == (1u << 22));
  for (const char* layout : {"packed", "padded"}) {
    INFO("layout " << layout);
    Loader loader(path, {{"rows", "rows", ragged_decoder(layout), {}}}, sequential(64));
    CHECK(check_batches(loader, DType::parse("<f4"), {4}, rows_of) == 70);
  }
}

TEST_CASE("skipped samples leave ragged batches compacted in step with the others", "[ragged]") {
  TempDir dir;
  const auto rows_of = [](std::uint64_t i) { return i % 4 == 0 ? 0 : i % 7; };
  const std::string path = ragged_file(dir, "r.beton", DType::parse("<u2"), {3}, 64, rows_of);
  for (const char* layout : {"packed", "padded"}) {
    INFO("layout " << layout);
    LoaderOptions options = sequential(8);
    options.on_error = OnSampleError::kSkip;
    options.max_skipped_fraction = 0.5;
    // Sample 6 is the largest of its batch (6 rows): the padded batch shrinks to 5 rows.
    const std::set<std::uint64_t> bad = {1, 6, 9, 10, 17, 33, 62};
    Loader loader(path,
                  {{"rows", "rows", ragged_decoder(layout), {}},
                   {"index", "index", nullptr, {std::make_shared<test::FailsFor>(bad)}}},
                  options);
    CHECK(check_batches(loader, DType::parse("<u2"), {3}, rows_of) == 64 - bad.size());
  }
}

TEST_CASE("ragged outputs take no operations", "[ragged][errors]") {
  TempDir dir;
  const std::string path =
      ragged_file(dir, "r.beton", DType::parse("<f4"), {4}, 4, [](std::uint64_t) { return 1; });
  CHECK_THROWS_WITH(Loader(path,
                           {{"rows",
                             "rows",
                             ragged_decoder("packed"),
                             {std::make_shared<test::FailsFor>(std::set<std::uint64_t>{})}}},
                           sequential(2)),
                    Catch::Contains("pipeline 'rows'") && Catch::Contains("ragged"));
  CHECK_THROWS_WITH(Loader(path, {{"index", "index", ragged_decoder("packed"), {}}}, sequential(2)),
                    Catch::Contains("needs a RaggedNDArray field"));
}

TEST_CASE("values of the wrong shape or dtype are refused naming the field", "[ragged][errors]") {
  const RaggedNdArrayField field(DType::parse("<f4"), {4});
  std::vector<EncodedAllocation> heap;
  std::uint8_t column[16] = {};
  const auto encode = [&](const NdArray& value) {
    field.encode(value, column, heap, EncodeContext{});
  };
  CHECK_THROWS_WITH(encode({DType::parse("<f4"), {3, 5}, std::vector<std::uint8_t>(60)}),
                    Catch::Contains("shape [n, 4], got [3, 5]"));
  CHECK_THROWS_WITH(encode({DType::parse("<f4"), {12}, std::vector<std::uint8_t>(48)}),
                    Catch::Contains("shape [n, 4], got [12]"));
  CHECK_THROWS_WITH(encode({DType::parse("<f8"), {3, 4}, std::vector<std::uint8_t>(96)}),
                    Catch::Contains("dtype <f4 got an array of dtype <f8"));
  CHECK_THROWS_WITH(encode({DType::parse("<f4"), {3, 4}, std::vector<std::uint8_t>(47)}),
                    Catch::Contains("holds 47 bytes"));
  CHECK_THROWS_AS(RaggedNdArrayField(DType::parse("<f4"), {4, 0}), ConfigError);
  CHECK_THROWS_AS(RaggedNdArrayField(DType::parse("<f4"), std::vector<std::uint64_t>(17, 1)),
                  ConfigError);
  CHECK_THROWS_WITH(RaggedNdArrayField(DType::parse("<f8"), {1ull << 62}),
                    Catch::Contains("more bytes than 64 bits"));
}

TEST_CASE("corrupt ragged counts, pointers and arguments are refused naming the sample",
          "[ragged][errors]") {
  TempDir dir;
  const auto rows_of = [](std::uint64_t i) { return i % 3; };  // sample 0 and 3 have no rows
  const std::string good = ragged_file(dir, "ok.beton", DType::parse("<f4"), {4}, 6, rows_of);
  const std::vector<std::uint8_t> bytes = test::read_file(good);
  const Reader reader(good);
  const std::uint64_t record = reader.layout().record_size;
  const std::uint64_t column = reader.metadata_offset();  // "rows" is the first column
  const std::string path = dir.file("bad.beton");
  const auto corrupted = [&](const std::function<void(std::vector<std::uint8_t>&)>& change) {
    std::vector<std::uint8_t> copy = bytes;
    change(copy);
    test::write_file(path, copy);
    try {
      Reader bad(path);
      for (std::uint64_t i = 0; i < bad.num_samples(); ++i) bad.decode(i, 0);
      return std::string();
    } catch (const std::exception& error) {
      return std::string(error.what());
    }
  };
  // Sample 2's count one row more: its data no longer has the size the count requires.
  CHECK_THAT(corrupted([&](auto& b) { b[column + 2 * record + 8] += 1; }),
             Catch::Contains("sample 2 field 'rows'") && Catch::Contains("holds 32 bytes") &&
                 Catch::Contains(path));
  // A count whose bytes overflow 64 bits.
  CHECK_THAT(corrupted([&](auto& b) { b[column + 1 * record + 15] = 0x40; }),
             Catch::Contains("sample 1 field 'rows'") && Catch::Contains("overflows"));
  // A sample of no rows that points somewhere.
  CHECK_THAT(corrupted([&](auto& b) { store_le<std::uint64_t>(&b[column + 3 * record], 4096); }),
             Catch::Contains("sample 3 field 'rows'") && Catch::Contains("must be 0"));
  // A sample of rows whose pointer starts no allocation.
  CHECK_THAT(corrupted([&](auto& b) { b[column + 4 * record] += 4; }),
             Catch::Contains("sample 4 field 'rows'") && Catch::Contains("allocation table"));
  // A count that claims a whole other sample's data.
  CHECK_THAT(
      corrupted([&](auto& b) { std::memcpy(&b[column + 5 * record], &b[column + 4 * record], 8); }),
      Catch::Contains("sample 5 field 'rows'") && Catch::Contains("owned by sample 4"));
  // The descriptor's arguments (at 24 + 1 + 16): version, rank and dtype.
  const std::size_t args = 24 + 1 + 16;
  CHECK_THAT(corrupted([&](auto& b) { b[args + 16] = 2; }), Catch::Contains("version 2"));
  CHECK_THAT(corrupted([&](auto& b) { b[args + 20] = 17; }), Catch::Contains("rank 17"));
  CHECK_THAT(corrupted([&](auto& b) { std::memcpy(&b[args + 152], "<x4", 3); }),
             Catch::Contains("unsupported dtype"));
  CHECK_THAT(corrupted([&](auto& b) { b[args] = 'X'; }), Catch::Contains("custom field"));
}
