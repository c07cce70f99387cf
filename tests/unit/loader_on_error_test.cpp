// LoaderOptions::on_error: a sample that fails either ends the epoch naming it (fail) or is left
// out of its batch, counted and listed, up to a stated share (skip).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <set>

#include "fails_for.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

constexpr std::uint64_t kDatasetSamples = 200;

// Int field "value" holding each sample's own index.
std::string index_file(const test::TempDir& dir) {
  const std::string path = dir.file("values.beton");
  DatasetWriter(path, {{"value", std::make_shared<IntField>()}})
      .write(test::FunctionSource(kDatasetSamples, [](std::uint64_t i) {
        return std::vector<FieldValue>{static_cast<std::int64_t>(i)};
      }));
  return path;
}

struct EpochResult {
  std::vector<std::vector<std::uint64_t>> batches;  // dataset indices per batch handed out
  std::set<std::uint64_t> skipped;
  std::uint64_t skipped_count = 0;
  std::string error;
};

EpochResult run_epoch(const std::string& path, const std::set<std::uint64_t>& bad,
                      LoaderOptions options) {
  Loader loader(path, {{"value", "value", nullptr, {std::make_shared<test::FailsFor>(bad)}}},
                options);
  EpochResult result;
  auto epoch = loader.epoch(0);
  try {
    while (auto batch = epoch.next()) {
      const BatchTensor values = batch->output("value");
      std::vector<std::uint64_t> indices(batch->indices().begin(), batch->indices().end());
      REQUIRE(indices.size() == batch->size());
      for (std::uint64_t k = 0; k < batch->size(); ++k) {
        std::int64_t value = 0;
        std::memcpy(&value, values.data + k * sizeof value, sizeof value);
        CHECK(static_cast<std::uint64_t>(value) == indices[k]);  // compacted with its index
      }
      result.batches.push_back(indices);
    }
  } catch (const Error& error) {
    result.error = error.what();
  }
  for (const SkippedSample& s : epoch.skipped()) result.skipped.insert(s.index);
  result.skipped_count = epoch.stats().skipped_samples;
  return result;
}

LoaderOptions base_options(int workers) {
  LoaderOptions options;
  options.batch_size = 8;
  options.num_workers = workers;
  options.drop_last = false;
  options.order.kind = OrderKind::kRandom;
  options.order.seed = 3;
  options.default_pipelines = false;
  return options;
}

}  // namespace

TEST_CASE("on_error = fail ends the epoch naming the sample", "[loader][on_error]") {
  test::TempDir dir;
  const EpochResult result = run_epoch(index_file(dir), {17}, base_options(2));
  CHECK_THAT(result.error, Catch::Contains("sample 17") && Catch::Contains("fails_for") &&
                               Catch::Contains("planted failure"));
  CHECK(result.skipped_count == 0);
}

TEST_CASE("on_error = skip hands out exactly the good samples, the same for any workers",
          "[loader][on_error]") {
  test::TempDir dir;
  const std::string path = index_file(dir);
  const std::set<std::uint64_t> bad = {3, 17, 18, 101, 199};
  std::vector<std::vector<std::uint64_t>> first;
  for (const int workers : {1, 4}) {
    INFO(workers << " workers");
    LoaderOptions options = base_options(workers);
    options.on_error = OnSampleError::kSkip;
    options.max_skipped_fraction = 0.05;  // 10 of 200
    const EpochResult result = run_epoch(path, bad, options);
    CHECK(result.error.empty());
    CHECK(result.skipped == bad);
    CHECK(result.skipped_count == bad.size());
    std::set<std::uint64_t> seen;
    for (const auto& batch : result.batches) seen.insert(batch.begin(), batch.end());
    CHECK(seen.size() == kDatasetSamples - bad.size());
    for (const std::uint64_t index : bad) CHECK(seen.count(index) == 0);
    if (first.empty()) {
      first = result.batches;
    } else {
      CHECK(result.batches == first);
    }
  }
  // The good samples keep the order they have without failures.
  const EpochResult clean = run_epoch(path, {}, base_options(2));
  std::vector<std::uint64_t> expected, got;
  for (const auto& batch : clean.batches) {
    for (const std::uint64_t index : batch) {
      if (!bad.count(index)) expected.push_back(index);
    }
  }
  for (const auto& batch : first) got.insert(got.end(), batch.begin(), batch.end());
  CHECK(got == expected);
}

TEST_CASE("on_error = skip passes over a batch whose samples all failed", "[loader][on_error]") {
  test::TempDir dir;
  LoaderOptions options = base_options(3);
  options.order.kind = OrderKind::kSequential;
  options.on_error = OnSampleError::kSkip;
  options.max_skipped_fraction = 0.1;
  const EpochResult result = run_epoch(index_file(dir), {8, 9, 10, 11, 12, 13, 14, 15}, options);
  CHECK(result.error.empty());
  REQUIRE(result.batches.size() == kDatasetSamples / 8 - 1);
  CHECK(result.batches[1].front() == 16);  // batch 1 (samples 8..15) is not handed out
}

TEST_CASE("wait_ready waits in slices and passes over a batch whose samples all failed",
          "[loader][on_error]") {
  test::TempDir dir;
  LoaderOptions options = base_options(3);
  options.order.kind = OrderKind::kSequential;
  options.on_error = OnSampleError::kSkip;
  options.max_skipped_fraction = 0.1;
  const std::set<std::uint64_t> bad = {8, 9, 10, 11, 12, 13, 14, 15};
  Loader loader(index_file(dir),
                {{"value", "value", nullptr, {std::make_shared<test::FailsFor>(bad)}}}, options);
  auto epoch = loader.epoch(0);
  std::vector<std::uint64_t> firsts, positions;
  for (;;) {
    while (!epoch.wait_ready(std::chrono::milliseconds(10))) {
    }
    // Ready for a batch next() hands out at once: the empty batch 1 was passed over already.
    positions.push_back(epoch.position().batches_done);
    const auto batch = epoch.next();
    if (!batch) break;
    firsts.push_back(batch->indices().front());
  }
  REQUIRE(firsts.size() == kDatasetSamples / 8 - 1);
  CHECK(firsts[0] == 0);
  CHECK(firsts[1] == 16);
  CHECK(positions[0] == 0);
  CHECK(positions[1] == 2);
  CHECK(epoch.stats().skipped_samples == 8);
  // A stopped epoch is ready at once: next() then says it was stopped.
  auto stopped = loader.epoch(1);
  stopped.stop();
  CHECK(stopped.wait_ready(std::chrono::milliseconds(10'000)));
  CHECK_THROWS_WITH(stopped.next(), Catch::Contains("was stopped"));
}

TEST_CASE("on_error = skip fails the epoch past the stated share", "[loader][on_error]") {
  test::TempDir dir;
  LoaderOptions options = base_options(2);
  options.on_error = OnSampleError::kSkip;  // default share 0.01: ceil(2) samples of 200
  std::set<std::uint64_t> bad = {5, 50, 150};
  const EpochResult result = run_epoch(index_file(dir), bad, options);
  CHECK_THAT(result.error, Catch::Contains("3 samples failed and were skipped") &&
                               Catch::Contains("limit of 2") && Catch::Contains("planted failure"));
  options.max_skipped_fraction = 0;
  CHECK_THAT(run_epoch(index_file(dir), {5}, options).error, Catch::Contains("limit of 0"));
  options.max_skipped_fraction = 1.5;
  CHECK_THROWS_AS(run_epoch(index_file(dir), {}, options), ConfigError);
  CHECK(parse_on_sample_error("skip") == OnSampleError::kSkip);
  CHECK_THROWS_WITH(parse_on_sample_error("ignore"), Catch::Contains("fail, skip"));
}

TEST_CASE("ffcv bench --on-error skip counts JPEGs that cannot be decoded", "[cli][on_error]") {
  test::TempDir dir;
  const std::string path = dir.file("jpegs.beton");
  RgbImageOptions jpeg;
  jpeg.write_mode = ImageWriteMode::kJpg;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(jpeg)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(120, [](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(32, 24, i),
                                       static_cast<std::int64_t>(i % 4)};
      }));
  // Plant three samples whose JPEG does not start with a JPEG marker.
  test::break_jpeg_samples(path, {7, 60, 119});
  std::string out;
  CHECK(test::run_cli("bench " + path + " --batch-size 10 --epochs 1 --drop-last false --json",
                      out) == 1);
  CHECK_THAT(out, Catch::Contains("sample 7"));
  REQUIRE(test::run_cli("bench " + path +
                            " --batch-size 10 --epochs 1 --drop-last false --json --on-error skip "
                            "--max-skipped-fraction 0.05",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("\"samples\": 117") && Catch::Contains("\"skipped_samples\": 3"));
  CHECK(test::run_cli("bench " + path + " --on-error ignore", out) == 2);
}
