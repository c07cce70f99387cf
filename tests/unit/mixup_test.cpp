// Mixup as batch operations: image and label mixup against their formulas (each sample with
// the previous one, weights agreeing between the two), mixup_to_one_hot, the Beta(alpha,
// alpha) weights' moments, and identical batches for any number of workers.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

constexpr std::uint64_t kMixupSamples = 200;

// Image i is a 4x4x3 uint8 array filled with (i * 37) % 251; its label is i % 10.
std::string write_mixup_dataset(const test::TempDir& dir) {
  const std::string path = dir.file("mix.beton");
  DatasetWriter(path, {{"image", std::make_shared<NdArrayField>(
                                     DType::parse("|u1"), std::vector<std::uint64_t>{4, 4, 3})},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(kMixupSamples, [](std::uint64_t i) {
        NdArray image{DType::parse("|u1"), {4, 4, 3}, {}};
        image.bytes.assign(48, static_cast<std::uint8_t>((i * 37) % 251));
        return std::vector<FieldValue>{image, static_cast<std::int64_t>(i % 10)};
      }));
  return path;
}

std::shared_ptr<BatchOperation> batch_op(const std::string& name, const OpParams& params) {
  return OpRegistry::global().make_batch_operation(name, params);
}

LoaderOptions options(int workers) {
  LoaderOptions o;
  o.batch_size = 16;
  o.num_workers = workers;
  o.order.kind = OrderKind::kRandom;
  o.order.seed = 5;
  o.drop_last = false;
  return o;
}

std::vector<PipelineSpec> mixup_pipelines(double alpha, bool same_lambda, int classes) {
  const OpParams mixup({{"alpha", alpha}, {"same_lambda", same_lambda}});
  std::vector<std::shared_ptr<BatchOperation>> label_ops{batch_op("label_mixup", mixup)};
  std::vector<PipelineSpec> specs{{"image", "image", nullptr, {}, {batch_op("image_mixup", mixup)}},
                                  {"label", "label", nullptr, {}, label_ops}};
  if (classes > 0) {
    label_ops.push_back(
        batch_op("mixup_to_one_hot", OpParams({{"num_classes", std::int64_t{classes}}})));
    specs.push_back({"one_hot", "label", nullptr, {}, label_ops});
  }
  return specs;
}

float row_value(const BatchTensor& t, std::uint64_t i, std::uint64_t k) {
  float v;
  std::memcpy(&v, t.data + (i * t.state->element_count() + k) * 4, 4);
  return v;
}

}  // namespace

TEST_CASE("image and label mixup follow FFCV's formulas with one set of weights", "[mixup]") {
  test::TempDir dir;
  Loader loader(write_mixup_dataset(dir), mixup_pipelines(0.4, false, 10), options(2));
  REQUIRE(loader.outputs()[1].second.shape == std::vector<std::uint64_t>{3});
  REQUIRE(loader.outputs()[2].second.shape == std::vector<std::uint64_t>{10});
  auto it = loader.epoch(0);
  std::uint64_t batches = 0;
  while (auto batch = it.next()) {
    ++batches;
    const BatchTensor image = batch->output("image"), label = batch->output("label"),
                      hot = batch->output("one_hot");
    const auto indices = batch->indices();
    const std::uint64_t n = batch->size();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t self = indices[i], other = indices[i == 0 ? n - 1 : i - 1];
      CHECK(row_value(label, i, 0) == static_cast<float>(self % 10));
      CHECK(row_value(label, i, 1) == static_cast<float>(other % 10));
      const float lambda = row_value(label, i, 2);
      REQUIRE(lambda >= 0.0f);
      REQUIRE(lambda <= 1.0f);
      const float a = static_cast<float>((self * 37) % 251),
                  b = static_cast<float>((other * 37) % 251);
      const auto expected = static_cast<std::uint8_t>(lambda * a + (1.0f - lambda) * b);
      for (std::uint64_t k = 0; k < 48; ++k) CHECK(image.data[i * 48 + k] == expected);
      // One-hot: lambda at the first label, 1 - lambda at the second, summing when equal.
      float sum = 0;
      for (std::uint64_t c = 0; c < 10; ++c) {
        float want = 0;
        if (c == self % 10) want += lambda;
        if (c == other % 10) want += 1.0f - lambda;
        CHECK(row_value(hot, i, c) == Approx(want).margin(1e-6));
        sum += row_value(hot, i, c);
      }
      CHECK(sum == Approx(1.0f));
    }
  }
  CHECK(batches == 13);  // 200 samples in batches of 16, the last one partial
}

TEST_CASE("mixup weights are Beta(alpha, alpha), per sample or per batch", "[mixup]") {
  test::TempDir dir;
  const std::string path = write_mixup_dataset(dir);
  for (const double alpha : {0.2, 1.0, 3.0}) {
    Loader loader(path, mixup_pipelines(alpha, false, 0), options(2));
    std::vector<double> lambdas;
    for (std::uint64_t epoch = 0; epoch < 20; ++epoch) {
      auto it = loader.epoch(epoch);
      while (auto batch = it.next()) {
        const BatchTensor label = batch->output("label");
        for (std::uint64_t i = 0; i < batch->size(); ++i) lambdas.push_back(row_value(label, i, 2));
      }
    }
    double mean = 0, variance = 0;
    for (double l : lambdas) mean += l;
    mean /= lambdas.size();
    for (double l : lambdas) variance += (l - mean) * (l - mean);
    variance /= lambdas.size() - 1;
    const double expected_variance = 1.0 / (4.0 * (2.0 * alpha + 1.0));
    INFO("alpha " << alpha << ", " << lambdas.size() << " draws");
    // 4000 draws: the standard error of the mean is at most 0.008, of the variance ~0.003.
    CHECK(mean == Approx(0.5).margin(0.03));
    CHECK(variance == Approx(expected_variance).margin(0.012));
  }
  Loader same(path, mixup_pipelines(0.5, true, 0), options(1));
  auto it = same.epoch(0);
  while (auto batch = it.next()) {
    const BatchTensor label = batch->output("label");
    for (std::uint64_t i = 1; i < batch->size(); ++i) {
      CHECK(row_value(label, i, 2) == row_value(label, 0, 2));
    }
  }
}

TEST_CASE("mixup batches are identical for 1 and 4 workers", "[mixup]") {
  test::TempDir dir;
  const std::string path = write_mixup_dataset(dir);
  Loader one(path, mixup_pipelines(0.3, false, 10), options(1));
  Loader four(path, mixup_pipelines(0.3, false, 10), options(4));
  auto a = one.epoch(3), b = four.epoch(3);
  for (;;) {
    auto x = a.next(), y = b.next();
    REQUIRE(x.has_value() == y.has_value());
    if (!x) break;
    for (std::size_t o = 0; o < x->num_outputs(); ++o) {
      const BatchTensor p = x->output(o), q = y->output(o);
      CHECK(std::memcmp(p.data, q.data, p.count * p.state->byte_size()) == 0);
    }
  }
}

TEST_CASE("mixup refuses states it cannot mix and bad parameters", "[mixup]") {
  test::TempDir dir;
  const std::string path = write_mixup_dataset(dir);
  const OpParams mixup({{"alpha", 0.2}});
  CHECK_THROWS_WITH(
      Loader(path, {{"label", "label", nullptr, {}, {batch_op("image_mixup", mixup)}}}, options(1)),
      Catch::Contains("image_mixup needs uint8 images"));
  CHECK_THROWS_WITH(
      Loader(path, {{"image", "image", nullptr, {}, {batch_op("label_mixup", mixup)}}}, options(1)),
      Catch::Contains("label_mixup needs one int64 label"));
  CHECK_THROWS_AS(batch_op("image_mixup", OpParams({{"alpha", -1.0}})), ConfigError);
  CHECK_THROWS_AS(batch_op("mixup_to_one_hot", {}), ConfigError);
  CHECK_THROWS_WITH(batch_op("image_mixup", OpParams({{"alpah", 0.2}})), Catch::Contains("alpah"));
}
