// glm_saga's path: one λ for every output column, warm starts, look-behind stopping, a point
// selected on the validation rows by saga.selection (saga_path.hpp).
#include <cmath>
#include <limits>
#include <sstream>

#include "ffcv/saga/row_source.hpp"

#include "ffcv/saga/saga_path.hpp"
#include "ffcv/stopwatch.hpp"

namespace ffcv::saga {

std::vector<double> elastic_net_lambdas(const SagaSolver& solver, const RowStats& stats) {
  if (!solver.lambdas.empty()) return solver.lambdas;
  const double bound = stats.gradient_bound.max().item<double>();
  const double lambda_max = bound / std::max(solver.alpha, 1e-3);
  std::vector<double> lambdas;
  const std::uint64_t m = solver.num_lambdas;
  for (std::uint64_t j = 0; j < m; ++j) {
    const double t = m == 1 ? 0.0 : static_cast<double>(j) / static_cast<double>(m - 1);
    lambdas.push_back(lambda_max * std::pow(solver.epsilon, t));
  }
  if (solver.do_zero) lambdas.push_back(0.0);
  return lambdas;
}

PathResult solve_elastic_net(const SagaSolver& solver, const SolveInputs& in) {
  const Stopwatch start;
  const auto elapsed = [&] { return start.seconds(); };
  const RowStats& stats = *in.stats;
  RowSource& train = *in.train;
  const bool gaussian = in.family == Family::kGaussian;
  // The data term: (1/2n) Σ‖r‖² or (1/n) Σ CE.
  const double data_factor = gaussian ? 0.5 : 1.0;
  SagaState state =
      SagaState::zeros(stats.features, stats.outputs, train.range().first + train.rows(),
                       train.rows(), in.device, solver.table == "host");
  const std::vector<double> lambdas = elastic_net_lambdas(solver, stats);
  const std::size_t nonzero_points = lambdas.size() - (solver.do_zero && solver.lambdas.empty());
  const auto d = static_cast<std::int64_t>(stats.features);
  const auto k = static_cast<std::int64_t>(stats.outputs);
  const auto points = static_cast<std::int64_t>(lambdas.size());

  PathResult result;
  // Every point's model, when asked for or when one_se may select an earlier point than the best.
  const bool keep_path = keeps_path_models(solver);
  if (keep_path) {
    result.path_weights = at::zeros({points, d, k}, at::kFloat);
    result.path_bias = at::zeros({points, k}, at::kFloat);
  }
  std::vector<Candidate> candidates;
  std::uint64_t epoch = 0;
  for (std::size_t p = 0; p < lambdas.size(); ++p) {
    // η falls log-linearly from lr to lr / lr_decay_factor over the nonzero λ.
    const std::size_t lr_index = std::min(p, nonzero_points == 0 ? 0 : nonzero_points - 1);
    const double t = nonzero_points <= 1
                         ? 0.0
                         : static_cast<double>(lr_index) / static_cast<double>(nonzero_points - 1);
    const double lr = solver.lr * std::pow(1.0 / solver.lr_decay_factor, t);
    const at::Tensor lambda =
        at::full({k}, lambdas[p], at::TensorOptions(in.device).dtype(at::kFloat));
    const at::Tensor at_bound =
        columns_at_bound(stats, at::full({k}, lambdas[p], at::TensorOptions().dtype(at::kDouble)),
                         solver.alpha, in.family);
    // Every column at its bound: the optimum is known, no epochs are needed.
    const bool all_at_bound = at_bound.all().item<bool>();
    double best = std::numeric_limits<double>::infinity(), objective = 0;
    std::uint64_t since_best = 0, epochs_here = 0;
    bool converged = all_at_bound;
    while (!converged && epochs_here < solver.max_epochs) {
      const double step_tol = solver.lookbehind == 0 ? solver.tol : 0.0;
      const double epoch_start = elapsed();
      const EpochLosses losses = train_epoch(state, train, ++epoch, stats, in.family, lr, lambda,
                                             solver.alpha, in.stop, {}, step_tol);
      ++epochs_here;
      // The running mean over the rows this epoch stepped on, plus the penalty now.
      objective = losses.sums.sum().item<double>() * data_factor /
                      static_cast<double>(std::max<std::uint64_t>(losses.rows, 1)) +
                  penalty(state.weight, lambda, solver.alpha).sum().item<double>();
      result.train_seconds += elapsed() - epoch_start;
      result.rows_stepped += losses.rows;
      if (!std::isfinite(objective)) {
        throw std::runtime_error("the SAGA solve diverged at λ = " + std::to_string(lambdas[p]) +
                                 " (non-finite loss; the rows' values are finite): lower "
                                 "saga.lr (now " +
                                 std::to_string(lr) + ")");
      }
      if (solver.lookbehind == 0) {
        converged = losses.small_step;
        continue;
      }
      if (objective + solver.tol < best) {
        best = objective;
        since_best = 0;
      } else if (++since_best >= solver.lookbehind) {
        converged = true;
      }
    }
    settle_columns_at_bound(state, stats, at_bound, in.family);
    PathPoint point;
    point.lambda = lambdas[p];
    point.lr = lr;
    point.penalty = penalty(state.weight, lambda, solver.alpha).sum().item<double>();
    // The data term of this λ's final model over all rows of a source (one pass each).
    point.train_loss =
        evaluate_rows(state, train, stats, in.family, in.stop).sums.sum().item<double>() *
        data_factor / static_cast<double>(train.rows());
    point.val_loss = point.val_se = std::numeric_limits<double>::quiet_NaN();
    if (in.val != nullptr) {
      const RowLosses val = evaluate_rows(state, *in.val, stats, in.family, in.stop);
      const double n = static_cast<double>(val.rows);
      const double sum = val.sums.sum().item<double>();
      point.val_loss = sum * data_factor / n;
      point.val_se = data_factor * standard_error(sum, val.row_square_sum.item<double>(), n);
      if (!std::isfinite(point.val_loss)) {
        check_rows_finite(*in.val, in.stop);  // throws naming the row
        throw std::runtime_error("the validation loss at λ = " + std::to_string(lambdas[p]) +
                                 " is not finite: lower saga.lr (now " + std::to_string(lr) + ")");
      }
    }
    point.nnz = static_cast<std::uint64_t>(nonzero_weights(state.weight));
    point.epochs = epochs_here;
    point.seconds = elapsed();
    point.converged = converged;
    result.points.push_back(point);
    const at::Tensor weight = state.weight.to(at::kCPU);
    const at::Tensor bias = state.bias.to(at::kCPU);
    if (keep_path) {
      result.path_weights[static_cast<std::int64_t>(p)].copy_(weight);
      result.path_bias[static_cast<std::int64_t>(p)].copy_(bias);
    }
    candidates.push_back(
        {point.lambda, point.val_loss, point.val_se, point.val_loss + point.penalty});
    const std::size_t chosen = select_point(candidates, solver.selection);
    if (chosen == p) {  // the model now selected is this one (one_se may still move back)
      result.weight = weight.clone();
      result.bias = bias.clone();
      result.selected_seconds = point.seconds;
    }
    if (!converged) ++result.unfinished;
    if (in.progress) {
      std::ostringstream line;
      line.precision(4);
      line << "λ " << p + 1 << "/" << lambdas.size() << " = " << point.lambda << ": " << epochs_here
           << " epochs, loss " << point.train_loss;
      if (in.val != nullptr) line << ", validation " << point.val_loss;
      line << ", " << point.nnz << " nonzero" << (converged ? "" : " (max_epochs reached)");
      in.progress(line.str());
    }
  }
  const std::size_t chosen = select_point(candidates, solver.selection);
  if (keep_path) {
    result.weight = result.path_weights[static_cast<std::int64_t>(chosen)].clone();
    result.bias = result.path_bias[static_cast<std::int64_t>(chosen)].clone();
    result.selected_seconds = result.points[chosen].seconds;
  }
  result.lambda =
      at::full({k}, result.points[chosen].lambda, at::TensorOptions().dtype(at::kDouble));
  result.val_loss =
      at::full({k}, result.points[chosen].val_loss, at::TensorOptions().dtype(at::kDouble));
  if (!solver.path_weights) result.path_weights = result.path_bias = at::Tensor();
  result.epochs = epoch;
  result.seconds = elapsed();
  return result;
}

}  // namespace ffcv::saga
