// image_mixup, label_mixup and mixup_to_one_hot: FFCV's mixup, as batch operations.
//
// Each sample i of a batch is mixed with sample i-1 (sample 0 with the last), with a weight
// lambda_i ~ Beta(alpha, alpha), one per sample or one per batch (`same_lambda`):
//   image_mixup       uint8 images:  out[i] = trunc(lambda_i * img[i] + (1 - lambda_i) * img[i-1])
//   label_mixup       int64 [1] labels -> float32 [3]: (label[i], label[i-1], lambda_i)
//   mixup_to_one_hot  float32 [3] -> float32 [num_classes]:
//                     lambda * onehot(a) + (1 - lambda) * onehot(b)  (1 when a == b, where
//                     FFCV's gives 1 - lambda)
// The weights come from BatchContext::uniform of the operations' `group`, so an image_mixup and
// a label_mixup with the same group and parameters agree, whatever thread runs them. FFCV
// instead re-seeds the worker's global generator with the batch's last index.
#include <cmath>
#include <cstring>

#include "ffcv/util/errors.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

// The uniform numbers of one sample's draw: sample i reads counters i*kPerSample, ... .
constexpr std::uint32_t kPerSample = 64;

class Draws {
 public:
  Draws(const BatchContext& context, std::uint32_t group, std::uint64_t sample)
      : context_(context), group_(group), n_(static_cast<std::uint32_t>(sample * kPerSample)) {}
  double uniform() { return context_.uniform(group_, n_++); }
  // (0, 1]: safe for logarithms.
  double open_uniform() { return 1.0 - uniform(); }
  double normal() {
    return std::sqrt(-2.0 * std::log(open_uniform())) * std::cos(2.0 * M_PI * uniform());
  }

 private:
  const BatchContext& context_;
  std::uint32_t group_;
  std::uint32_t n_;
};

// Gamma(shape, 1) by Marsaglia and Tsang's method; shape < 1 through Gamma(shape + 1) *
// U^(1/shape).
double gamma(double shape, Draws& draws) {
  if (shape < 1.0) return gamma(shape + 1.0, draws) * std::pow(draws.open_uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = draws.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = draws.open_uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

struct MixupParams {
  double alpha = 0;
  bool same_lambda = false;
  std::uint32_t group = 0;
};

// The parameters as declared in builtin_steps.cpp (alpha > 0, group 0..65535).
MixupParams read_mixup(const OpParams& params) {
  MixupParams mixup;
  mixup.alpha = params.require_double("alpha");
  mixup.same_lambda = params.require_bool("same_lambda");
  mixup.group = static_cast<std::uint32_t>(params.require_int("group"));
  return mixup;
}

// lambda of every sample of the batch.
std::vector<double> lambdas(const MixupParams& mixup, const BatchContext& context) {
  const std::size_t n = context.indices.size();
  std::vector<double> result(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (mixup.same_lambda && i > 0) {
      result[i] = result[0];
      continue;
    }
    Draws draws(context, mixup.group, i);
    const double x = gamma(mixup.alpha, draws), y = gamma(mixup.alpha, draws);
    result[i] = x + y > 0 ? x / (x + y) : 0.5;
  }
  return result;
}

std::size_t partner(std::size_t i, std::size_t n) { return i == 0 ? n - 1 : i - 1; }

class ImageMixup final : public BatchOperation {
 public:
  explicit ImageMixup(MixupParams mixup) : mixup_(mixup) {}
  std::string name() const override { return "image_mixup"; }
  TensorState declare(const TensorState& input) override {
    if (input.dtype.kind != 'u' || input.dtype.itemsize != 1) {
      throw ConfigError("image_mixup needs uint8 images, got " + input.to_string());
    }
    bytes_ = input.byte_size();
    return input;
  }
  void apply(const std::uint8_t* input, std::uint8_t* output,
             const BatchContext& context) const override {
    const std::size_t n = context.indices.size();
    const std::vector<double> weights = lambdas(mixup_, context);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t* a = input + i * bytes_;
      const std::uint8_t* b = input + partner(i, n) * bytes_;
      std::uint8_t* out = output + i * bytes_;
      const float lambda = static_cast<float>(weights[i]), rest = 1.0f - lambda;
      for (std::uint64_t k = 0; k < bytes_; ++k) {
        out[k] = static_cast<std::uint8_t>(lambda * a[k] + rest * b[k]);
      }
    }
  }

 private:
  MixupParams mixup_;
  std::uint64_t bytes_ = 0;
};

class LabelMixup final : public BatchOperation {
 public:
  explicit LabelMixup(MixupParams mixup) : mixup_(mixup) {}
  std::string name() const override { return "label_mixup"; }
  TensorState declare(const TensorState& input) override {
    if (input.dtype.kind != 'i' || input.dtype.itemsize != 8 || input.element_count() != 1) {
      throw ConfigError("label_mixup needs one int64 label per sample, got " + input.to_string());
    }
    return {DType::parse("<f4"), {3}};
  }
  void apply(const std::uint8_t* input, std::uint8_t* output,
             const BatchContext& context) const override {
    const std::size_t n = context.indices.size();
    const std::vector<double> weights = lambdas(mixup_, context);
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t a = 0, b = 0;
      std::memcpy(&a, input + i * 8, 8);
      std::memcpy(&b, input + partner(i, n) * 8, 8);
      const float row[3] = {static_cast<float>(a), static_cast<float>(b),
                            static_cast<float>(weights[i])};
      std::memcpy(output + i * sizeof(row), row, sizeof(row));
    }
  }

 private:
  MixupParams mixup_;
};

class MixupToOneHot final : public BatchOperation {
 public:
  explicit MixupToOneHot(std::int64_t classes) : classes_(classes) {}
  std::string name() const override { return "mixup_to_one_hot"; }
  TensorState declare(const TensorState& input) override {
    if (input.dtype.kind != 'f' || input.dtype.itemsize != 4 || input.shape.size() != 1 ||
        input.shape[0] != 3) {
      throw ConfigError("mixup_to_one_hot needs label_mixup's float32 [3] rows, got " +
                        input.to_string());
    }
    return {DType::parse("<f4"), {static_cast<std::uint64_t>(classes_)}};
  }
  void apply(const std::uint8_t* input, std::uint8_t* output,
             const BatchContext& context) const override {
    for (std::size_t i = 0; i < context.indices.size(); ++i) {
      float row[3];
      std::memcpy(row, input + i * sizeof(row), sizeof(row));
      std::vector<float> hot(static_cast<std::size_t>(classes_), 0.0f);
      const auto a = static_cast<std::int64_t>(row[0]), b = static_cast<std::int64_t>(row[1]);
      if (a < 0 || a >= classes_ || b < 0 || b >= classes_) {
        throw Error("mixup_to_one_hot: label " + std::to_string(a < 0 || a >= classes_ ? a : b) +
                    " of sample " + std::to_string(context.indices[i]) + " is outside 0.." +
                    std::to_string(classes_ - 1));
      }
      hot[static_cast<std::size_t>(a)] += row[2];
      hot[static_cast<std::size_t>(b)] += 1.0f - row[2];
      std::memcpy(output + i * hot.size() * 4, hot.data(), hot.size() * 4);
    }
  }

 private:
  std::int64_t classes_;
};

}  // namespace

std::shared_ptr<BatchOperation> make_image_mixup(const OpParams& params) {
  return std::make_shared<ImageMixup>(read_mixup(params));
}

std::shared_ptr<BatchOperation> make_label_mixup(const OpParams& params) {
  return std::make_shared<LabelMixup>(read_mixup(params));
}

std::shared_ptr<BatchOperation> make_mixup_to_one_hot(const OpParams& params) {
  return std::make_shared<MixupToOneHot>(params.require_int("num_classes"));
}

}  // namespace ffcv
