// glm_saga's path: one λ for every output column, warm starts, look-behind stopping, selection
// by penalized validation loss (saga_path.hpp).
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "ffcv/saga/saga_path.hpp"

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
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
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

  PathResult result;
  std::vector<at::Tensor> path_weights;
  double best_val = std::numeric_limits<double>::infinity();
  std::uint64_t epoch = 0;
  for (std::size_t p = 0; p < lambdas.size(); ++p) {
    // η falls log-linearly from lr to lr / lr_decay_factor over the nonzero λ.
    const std::size_t lr_index = std::min(p, nonzero_points == 0 ? 0 : nonzero_points - 1);
    const double t = nonzero_points <= 1
                         ? 0.0
                         : static_cast<double>(lr_index) / static_cast<double>(nonzero_points - 1);
    const double lr = solver.lr * std::pow(1.0 / solver.lr_decay_factor, t);
    const at::Tensor lambda = at::full({static_cast<std::int64_t>(stats.outputs)}, lambdas[p],
                                       at::TensorOptions(in.device).dtype(at::kFloat));
    double best = std::numeric_limits<double>::infinity(), objective = 0;
    std::uint64_t since_best = 0, epochs_here = 0;
    bool converged = false;
    while (epochs_here < solver.max_epochs) {
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
                                 " (non-finite loss): lower saga.lr");
      }
      if (solver.lookbehind == 0) {
        if (losses.small_step) {
          converged = true;
          break;
        }
        continue;
      }
      if (objective + solver.tol < best) {
        best = objective;
        since_best = 0;
      } else if (++since_best >= solver.lookbehind) {
        converged = true;
        break;
      }
    }
    PathPoint point;
    point.lambda = lambdas[p];
    point.lr = lr;
    // The objective of this λ's final model over all rows of a source (one pass each).
    const double penalty_value = penalty(state.weight, lambda, solver.alpha).sum().item<double>();
    const auto objective_over = [&](RowSource& rows) {
      return evaluate_rows(state, rows, stats, in.family, in.stop).sum().item<double>() *
                 data_factor / static_cast<double>(rows.rows()) +
             penalty_value;
    };
    point.train_loss = objective_over(train);
    point.val_loss =
        in.val != nullptr ? objective_over(*in.val) : std::numeric_limits<double>::quiet_NaN();
    point.nnz = static_cast<std::uint64_t>(nonzero_weights(state.weight));
    point.epochs = epochs_here;
    point.seconds = elapsed();
    point.converged = converged;
    result.points.push_back(point);
    path_weights.push_back(state.weight.to(at::kCPU).clone());
    // The least penalized validation loss, or the last point without validation rows.
    if (in.val == nullptr || point.val_loss < best_val) {
      best_val = point.val_loss;
      result.weight = state.weight.to(at::kCPU).clone();
      result.bias = state.bias.to(at::kCPU).clone();
      result.lambda = at::full({static_cast<std::int64_t>(stats.outputs)}, point.lambda,
                               at::TensorOptions().dtype(at::kDouble));
      result.val_loss = at::full({static_cast<std::int64_t>(stats.outputs)}, point.val_loss,
                                 at::TensorOptions().dtype(at::kDouble));
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
  result.path_weights = at::stack(path_weights);
  result.epochs = epoch;
  result.seconds = elapsed();
  return result;
}

}  // namespace ffcv::saga
