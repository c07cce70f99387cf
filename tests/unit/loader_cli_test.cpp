// `ffcv bench` and `ffcv doctor` end to end on a small file.
#include <catch2/catch.hpp>

#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

std::string small_file(const test::TempDir& dir) {
  const std::string path = dir.file("small.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {static_cast<std::int64_t>(i), Bytes(100 + i % 50, static_cast<std::uint8_t>(i))};
  };
  DatasetWriter(path,
                {{"label", std::make_shared<IntField>()}, {"blob", std::make_shared<BytesField>()}},
                {.page_size = 1u << 21})
      .write(test::FunctionSource(4000, make));
  return path;
}

}  // namespace

TEST_CASE("ffcv bench reports throughput, stages and the memcpy baseline", "[cli][loader]") {
  test::TempDir dir;
  const std::string path = small_file(dir);
  std::string out;
  REQUIRE(test::run_cli("bench " + path + " --batch-size 100 --epochs 2 --json", out) == 0);
  CHECK_THAT(out, Catch::Contains("\"samples_per_s\"") && Catch::Contains("\"samples\": 4000") &&
                      Catch::Contains("\"memcpy_bytes_per_s\""));
  // Every label is distinct here: a sequential batch of 100 holds 100.
  CHECK_THAT(out, Catch::Contains("\"distinct_labels_per_batch\": 100.000"));
  // --cold drops the file from the OS page cache before each epoch, mmap or process cache.
  REQUIRE(test::run_cli("bench " + path + " --batch-size 100 --epochs 2 --cold --json", out) == 0);
  REQUIRE(test::run_cli("bench " + path + " --batch-size 100 --epochs 2 --cold --process-cache",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("100.0 distinct labels"));
  REQUIRE(test::run_cli("bench " + path + " --order quasi_random --process-cache --fields blob",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("output blob") && !Catch::Contains("output label") &&
                      Catch::Contains("storage:") && Catch::Contains("loader / memcpy"));
  CHECK(test::run_cli("bench " + path + " --order randomly", out) == 2);
  CHECK_THAT(out, Catch::Contains("randomly"));
}

TEST_CASE("ffcv doctor names the bottleneck it was given", "[cli][loader]") {
  test::TempDir dir;
  const std::string path = small_file(dir);
  std::string out;
  REQUIRE(test::run_cli("doctor " + path + " --batch-size 100 --batches 20 --step-ms 30 --json",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("\"bottleneck\": \"consumer\""));
  // Slow storage: 100 ms per read through the process cache, sequential order.
  REQUIRE(test::run_cli("doctor " + path +
                            " --batch-size 100 --batches 20 --process-cache "
                            "--latency-ms 100 --readers 1 --json",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("\"bottleneck\": \"storage\""));
}
