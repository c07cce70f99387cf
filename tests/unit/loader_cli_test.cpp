// `ffcv bench` and `ffcv doctor` end to end on a small file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

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

// The one line a device command prints where it cannot run: no GPU is visible, the build has no
// trainer, or it was configured without CUDA.
bool says_device_cannot_run(const std::string& out) {
  for (const char* reason :
       {"no CUDA device is visible", "this build has no trainer", "this build has no CUDA"}) {
    if (out.find(reason) != std::string::npos) return true;
  }
  return false;
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
  REQUIRE(test::run_cli("bench " + path + " --batch-size 100 --epochs 2 --cold --os-cache false",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("100.0 distinct labels"));
  REQUIRE(test::run_cli("bench " + path + " --order quasi_random --os-cache false --fields blob",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("output blob") && !Catch::Contains("output label") &&
                      Catch::Contains("storage:") && Catch::Contains("loader / memcpy"));
  CHECK(test::run_cli("bench " + path + " --order randomly", out) == 2);
  CHECK_THAT(out, Catch::Contains("randomly"));
}

TEST_CASE("ffcv bench --device and --image-decode: what cannot run is one clear line",
          "[cli][loader]") {
  test::TempDir dir;
  const std::string path = small_file(dir);
  std::string out;
  CHECK(test::run_cli("bench " + path + " --image-decode gpu", out) == 2);
  CHECK_THAT(out, Catch::Contains("give --device cuda too"));
  CHECK(test::run_cli("bench " + path + " --device tpu", out) == 2);
  CHECK_THAT(out, Catch::Contains("--device takes cpu or cuda"));
  // --device cuda runs in ffcv-train. Without a GPU it says so; with one, this file (no image
  // field) loads to the GPU and prints its epochs.
  const int status = test::run_cli("bench " + path + " --device cuda --epochs 1", out);
  if (out.find("samples/s on cuda") != std::string::npos) {
    CHECK(status == 0);
  } else {
    CHECK(status == 1);
    INFO(out);
    CHECK(says_device_cannot_run(out));
  }
}

TEST_CASE("ffcv doctor --device cuda: what cannot run is one clear line", "[cli][loader]") {
  test::TempDir dir;
  const std::string path = small_file(dir);
  std::string out;
  CHECK(test::run_cli("doctor " + path + " --image-decode gpu", out) == 2);
  CHECK_THAT(out, Catch::Contains("give --device cuda too"));
  CHECK(test::run_cli("doctor " + path + " --device cuda --step-ms 5", out) == 2);
  CHECK_THAT(out, Catch::Contains("--step-ms simulates a step on the CPU"));
  // Run in ffcv-train: without a GPU one line; with one, the feed's diagnosis.
  const int status = test::run_cli("doctor " + path + " --device cuda --batches 5", out);
  if (out.find("diagnosis:") != std::string::npos) {
    CHECK(status == 0);
    CHECK_THAT(out, Catch::Contains("too few for a reliable diagnosis"));
  } else {
    CHECK(status == 1);
    INFO(out);
    CHECK(says_device_cannot_run(out));
  }
}

TEST_CASE("ffcv bench reports each epoch's storage reads, not a running total", "[cli][loader]") {
  test::TempDir dir;
  const std::string path = small_file(dir);
  std::string out;
  REQUIRE(test::run_cli("bench " + path + " --batch-size 100 --epochs 3 --os-cache false --json",
                        out) == 0);
  // Every epoch reads the same pages once (the cache frees them at the end of the epoch), at
  // most the whole file: equal figures, each no more than the file's size.
  const auto values_of = [&](const std::string& key) {
    std::vector<std::uint64_t> values;
    const std::string quoted = "\"" + key + "\": ";
    for (std::size_t at = out.find(quoted); at != std::string::npos;
         at = out.find(quoted, at + 1)) {
      values.push_back(std::stoull(out.substr(at + quoted.size())));
    }
    return values;
  };
  const std::vector<std::uint64_t> bytes = values_of("storage_bytes_read");
  const std::vector<std::uint64_t> calls = values_of("storage_read_calls");
  INFO(out);
  REQUIRE(bytes.size() == 3);
  REQUIRE(calls.size() == 3);
  CHECK(bytes[0] > 0);
  CHECK(bytes[0] <= std::filesystem::file_size(path));
  CHECK(bytes[1] == bytes[0]);
  CHECK(bytes[2] == bytes[0]);
  CHECK(calls[0] > 0);
  CHECK(calls[1] == calls[0]);
  CHECK(calls[2] == calls[0]);
  // The text report prints the same per-epoch figure on each epoch's storage line.
  REQUIRE(test::run_cli("bench " + path + " --batch-size 100 --epochs 2 --os-cache false", out) ==
          0);
  const std::size_t first = out.find("storage: ");
  REQUIRE(first != std::string::npos);
  const std::size_t second = out.find("storage: ", first + 1);
  REQUIRE(second != std::string::npos);
  CHECK(out.substr(first, out.find(" read in", first) - first) ==
        out.substr(second, out.find(" read in", second) - second));
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
                            " --batch-size 100 --batches 20 --os-cache false "
                            "--storage-latency-ms 100 --cache-readers 1 --json",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("\"bottleneck\": \"storage\""));
}
