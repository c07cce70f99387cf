#include "ffcv/saga/saga_step.hpp"

#include <cmath>

#include "ffcv/saga/row_source.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::saga {
namespace {

// Calls `use(batch)` for every batch of epoch `epoch` of `source`; throws SolveStopped once
// `stop` is set. `use` returns false to end the epoch early.
template <class Use>
void each_batch(RowSource& source, std::uint64_t epoch, const std::atomic<bool>* stop, Use use) {
  source.start_epoch(epoch);
  while (std::optional<RowBatch> batch = source.next()) {
    if (stop != nullptr && stop->load()) throw SolveStopped();
    if (!use(*batch)) return;
  }
}

// `total` + `part`, where an undefined `total` is nothing yet.
at::Tensor add_to(const at::Tensor& total, const at::Tensor& part) {
  return total.defined() ? total + part : part;
}

}  // namespace

double stream_seconds(RowSource& source, std::uint64_t epoch, const std::atomic<bool>* stop) {
  const Stopwatch start;
  at::Tensor total;
  each_batch(source, epoch, stop, [&](const RowBatch& batch) {
    total = add_to(total, batch.features.sum());
    return true;
  });
  if (total.defined()) (void)total.item<double>();  // waits for the device
  return start.seconds();
}

RowStats measure_rows(RowSource& source, Family family, std::uint64_t epoch,
                      const std::atomic<bool>* stop) {
  const std::uint64_t d = source.features();
  at::Tensor sum, sum_squares, target_sum, cross;  // float64 on the device
  std::int64_t outputs =
      family == Family::kGaussian ? static_cast<std::int64_t>(source.targets()) : 0;
  each_batch(source, epoch, stop, [&](const RowBatch& batch) {
    const at::Tensor x = batch.features.to(at::kDouble);
    at::Tensor y;
    if (family == Family::kMultinomial) {
      const std::int64_t largest = batch.targets.max().item<std::int64_t>();
      if (batch.targets.min().item<std::int64_t>() < 0) {
        throw ConfigError("class labels must be >= 0 (saga.family = \"multinomial\")");
      }
      outputs = std::max(outputs, largest + 1);
      y = at::one_hot(batch.targets, outputs).to(at::kDouble);
    } else {
      y = batch.targets.to(at::kDouble);
    }
    if (target_sum.defined() && y.size(1) > target_sum.size(0)) {  // a class seen first now
      const std::int64_t grow = y.size(1) - target_sum.size(0);
      target_sum = at::cat({target_sum, at::zeros({grow}, target_sum.options())});
      cross = at::cat({cross, at::zeros({cross.size(0), grow}, cross.options())}, 1);
    }
    sum = add_to(sum, x.sum(0));
    sum_squares = add_to(sum_squares, x.square().sum(0));
    target_sum = add_to(target_sum, y.sum(0));
    cross = add_to(cross, x.t().matmul(y));
    return true;
  });
  if (!sum.defined()) throw ConfigError("the training rows are empty");
  // One synchronization: a NaN or an infinity anywhere in the rows reaches these sums.
  const double total =
      (sum.sum() + sum_squares.sum() + target_sum.sum() + cross.sum()).item<double>();
  if (!std::isfinite(total)) {
    check_rows_finite(source, stop);  // throws naming the row
    throw std::runtime_error(source.features_origin() +
                             ": the training rows' sums overflowed float64");
  }
  const double n = static_cast<double>(source.rows());
  RowStats stats;
  stats.rows = source.rows();
  stats.features = d;
  stats.outputs = static_cast<std::uint64_t>(outputs);
  const at::Tensor mean = sum / n;
  const at::Tensor variance = (sum_squares / n - mean.square()).clamp_min(0);
  at::Tensor std = variance.sqrt();
  // A feature that is constant up to rounding carries nothing: it stays 0 after standardizing.
  std = at::where(std > 1e-12 * (mean.abs() + 1), std, at::zeros_like(std));
  const at::Tensor inv_std = at::where(std > 0, 1.0 / std, at::zeros_like(std));
  // Σᵢ x̃_ij (Y_ik − Ȳ_k) = (Σᵢ x_ij Y_ik − n μ_j Ȳ_k) / σ_j
  const at::Tensor centered = cross - mean.unsqueeze(1) * target_sum.unsqueeze(0);
  stats.gradient_bound =
      (centered.abs() * inv_std.unsqueeze(1)).amax(0).div(n).to(at::kCPU).contiguous();
  stats.target_mean = (target_sum / n).to(at::kCPU).contiguous();
  stats.mean = mean.to(at::kFloat);
  stats.std = std.to(at::kFloat);
  stats.inv_std = inv_std.to(at::kFloat);
  return stats;
}

SagaState SagaState::zeros(std::uint64_t features, std::uint64_t outputs, std::uint64_t table_rows,
                           std::uint64_t rows, at::Device device, bool table_on_host) {
  const auto d = static_cast<std::int64_t>(features), k = static_cast<std::int64_t>(outputs);
  const at::TensorOptions options = at::TensorOptions(device).dtype(at::kFloat);
  SagaState state;
  state.weight = at::zeros({d, k}, options);
  state.bias = at::zeros({k}, options);
  state.mean_grad_weight = at::zeros({d, k}, options);
  state.mean_grad_bias = at::zeros({k}, options);
  at::TensorOptions table_options = options;
  if (table_on_host) {
    table_options = at::TensorOptions(at::kCPU).dtype(at::kFloat).pinned_memory(device.is_cuda());
  }
  state.table = at::zeros({static_cast<std::int64_t>(table_rows), k}, table_options);
  state.rows = rows;
  return state;
}

namespace {

// The per-row scalar gradient a ∈ ℝ^K: the residual, or softmax minus one-hot.
at::Tensor scalar_gradient(const at::Tensor& outputs, const at::Tensor& targets, Family family) {
  if (family == Family::kGaussian) return outputs - targets;
  at::Tensor probabilities = at::softmax(outputs, 1);
  probabilities.scatter_add_(1, targets.unsqueeze(1),
                             at::full({targets.size(0), 1}, -1.0f, probabilities.options()));
  return probabilities;
}

}  // namespace

at::Tensor batch_loss_sums(const at::Tensor& outputs, const at::Tensor& targets, Family family) {
  if (family == Family::kGaussian) return (outputs - targets).square().sum(0);
  return at::cross_entropy_loss(outputs, targets, {}, at::Reduction::Sum).reshape({1});
}

at::Tensor columns_at_bound(const RowStats& stats, const at::Tensor& lambda, double alpha,
                            Family family, const std::vector<std::int64_t>& columns) {
  at::Tensor bound = stats.gradient_bound;
  if (!columns.empty()) bound = bound.index_select(0, at::tensor(columns, at::kLong));
  // λ_max = bound / α rounds; a relative 1e-9 below the bound is still at it (the optimum's
  // weights there are of that relative size, below float32's resolution).
  const at::Tensor reached = lambda.to(at::kDouble) * alpha >= bound * (1.0 - 1e-9);
  if (family == Family::kGaussian) return reached;
  // Every class's column at once: the bound of the whole problem.
  const bool all = (lambda.to(at::kDouble) * alpha >= stats.gradient_bound.max() * (1.0 - 1e-9))
                       .all()
                       .item<bool>();
  return at::full_like(reached, all);
}

void settle_columns_at_bound(SagaState& state, const RowStats& stats, const at::Tensor& at_bound,
                             Family family, const std::vector<std::int64_t>& columns) {
  if (!at_bound.any().item<bool>()) return;
  at::Tensor mean = stats.target_mean;
  if (!columns.empty()) mean = mean.index_select(0, at::tensor(columns, at::kLong));
  at::Tensor bias = mean;
  if (family == Family::kMultinomial) {
    // The softmax of log Ȳ is Ȳ; a class that never occurs has no finite optimum: keep SAGA's.
    if (!(mean > 0).all().item<bool>())
      bias = state.bias.to(at::kCPU).to(at::kDouble);
    else
      bias = mean.log();
  }
  const at::Tensor mask = at_bound.to(state.weight.device());
  state.weight.masked_fill_(mask.unsqueeze(0).expand_as(state.weight), 0.0);
  state.bias = at::where(mask, bias.to(state.bias.options()), state.bias);
}

at::Tensor RowStats::linear(const at::Tensor& features, const at::Tensor& weight,
                            const at::Tensor& bias) const {
  const at::Tensor scaled = weight * inv_std.unsqueeze(1);  // [d, K]
  return at::addmm(bias - mean.matmul(scaled), features, scaled);
}

at::Tensor RowStats::transposed_product(const at::Tensor& features, const at::Tensor& right) const {
  return (features.t().matmul(right) - mean.unsqueeze(1) * right.sum(0).unsqueeze(0)) *
         inv_std.unsqueeze(1);
}

at::Tensor saga_step(SagaState& state, const RowStats& stats, const at::Tensor& targets,
                     const RowBatch& batch, Family family, double lr, const at::Tensor& lambda,
                     double alpha) {
  const at::Tensor& features = batch.features;
  const at::Tensor outputs = stats.linear(features, state.weight, state.bias);
  const at::Tensor losses = batch_loss_sums(outputs, targets, family);
  const at::Tensor a = scalar_gradient(outputs, targets, family);
  const bool host_table = state.table.device() != a.device();
  const at::Tensor old_a = host_table
                               ? state.table.index_select(0, batch.rows_host).to(a.device(), true)
                               : state.table.index_select(0, batch.rows);
  const double size = static_cast<double>(features.size(0));
  const at::Tensor difference = a - old_a;
  const at::Tensor grad_weight = stats.transposed_product(features, difference).div_(size);
  const at::Tensor grad_bias = difference.mean(0);
  // Gradient step with the variance-reduced direction, then the proximal step.
  state.weight.sub_(grad_weight + state.mean_grad_weight, lr);
  state.bias.sub_(grad_bias + state.mean_grad_bias, lr);
  const at::Tensor threshold = lambda * (lr * alpha);
  const at::Tensor shrink = 1.0 + lambda * (lr * (1.0 - alpha));
  state.weight = state.weight.sign() * (state.weight.abs() - threshold).clamp_min_(0.0f) / shrink;
  // The table and its averages.
  const double share = size / static_cast<double>(state.rows);
  state.mean_grad_weight.add_(grad_weight, share);
  state.mean_grad_bias.add_(grad_bias, share);
  if (host_table) {
    state.table.index_copy_(0, batch.rows_host, a.to(at::kCPU));
  } else {
    state.table.index_copy_(0, batch.rows, a);
  }
  return losses;
}

EpochLosses train_epoch(SagaState& state, RowSource& source, std::uint64_t epoch,
                        const RowStats& stats, Family family, double lr, const at::Tensor& lambda,
                        double alpha, const std::atomic<bool>* stop, const TargetColumns& columns,
                        double step_tol) {
  EpochLosses epoch_losses;
  each_batch(source, epoch, stop, [&](const RowBatch& batch) {
    at::Tensor before_weight, before_bias;
    if (step_tol > 0) {
      before_weight = state.weight.clone();
      before_bias = state.bias.clone();
    }
    const at::Tensor losses =
        saga_step(state, stats, columns.of(batch.targets), batch, family, lr, lambda, alpha);
    epoch_losses.sums = add_to(epoch_losses.sums, losses.to(at::kDouble));
    epoch_losses.rows += static_cast<std::uint64_t>(batch.features.size(0));
    if (step_tol <= 0) return true;
    const double moved = std::sqrt((state.weight - before_weight).square().sum().item<double>() +
                                   (state.bias - before_bias).square().sum().item<double>());
    epoch_losses.small_step = moved <= step_tol;
    return !epoch_losses.small_step;
  });
  return epoch_losses;
}

RowLosses evaluate_rows(const SagaState& state, RowSource& source, const RowStats& stats,
                        Family family, const std::atomic<bool>* stop,
                        const TargetColumns& columns) {
  RowLosses losses;
  each_batch(source, 0, stop, [&](const RowBatch& batch) {
    const at::Tensor outputs = stats.linear(batch.features, state.weight, state.bias);
    const at::Tensor targets = columns.of(batch.targets);
    // Each row's loss: per column r² [B, K], or the cross-entropy [B, 1].
    const at::Tensor per_row =
        (family == Family::kGaussian
             ? (outputs - targets).square()
             : at::cross_entropy_loss(outputs, targets, {}, at::Reduction::None).unsqueeze(1))
            .to(at::kDouble);
    losses.sums = add_to(losses.sums, per_row.sum(0));
    losses.square_sums = add_to(losses.square_sums, per_row.square().sum(0));
    losses.row_square_sum =
        add_to(losses.row_square_sum, per_row.sum(1).square().sum().reshape({1}));
    losses.rows += static_cast<std::uint64_t>(per_row.size(0));
    return true;
  });
  return losses;
}

at::Tensor nonzero_per_column(const at::Tensor& weight) {
  return weight.abs().gt(kNonzeroWeight).sum(0);
}

std::int64_t nonzero_weights(const at::Tensor& weight) {
  return nonzero_per_column(weight).sum().item<std::int64_t>();
}

at::Tensor penalty(const at::Tensor& weight, const at::Tensor& lambda, double alpha) {
  return lambda * (alpha * weight.abs().sum(0) + 0.5 * (1.0 - alpha) * weight.square().sum(0));
}

}  // namespace ffcv::saga
