// glm_saga's path: one λ for every output column, warm starts, look-behind stopping, a point
// selected on the validation rows by saga.selection (saga_path.hpp).
#include <cmath>
#include <limits>
#include <sstream>

#include "ffcv/saga/row_source.hpp"

#include "ffcv/saga/saga_path.hpp"
#include "ffcv/util/stopwatch.hpp"

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

namespace {

// One run of the elastic-net path: the model warm-started from λ to λ, and the result gathered so
// far.
class ElasticNetSolve {
 public:
  ElasticNetSolve(const SagaSolver& solver, const SolveInputs& in)
      : solver_(solver),
        in_(in),
        stats_(*in.stats),
        train_(*in.train),
        // The data term: (1/2n) Σ‖r‖² or (1/n) Σ CE.
        data_factor_(in.family == Family::kGaussian ? 0.5 : 1.0),
        state_(SagaState::zeros(stats_.features, stats_.outputs,
                                train_.range().first + train_.rows(), train_.rows(), in.device,
                                solver.table == "host")),
        lambdas_(elastic_net_lambdas(solver, stats_)),
        nonzero_points_(lambdas_.size() - (solver.do_zero && solver.lambdas.empty())),
        k_(static_cast<std::int64_t>(stats_.outputs)),
        keep_path_(keeps_path_models(solver)) {
    if (keep_path_) {
      const auto d = static_cast<std::int64_t>(stats_.features);
      const auto points = static_cast<std::int64_t>(lambdas_.size());
      result_.path_weights = at::zeros({points, d, k_}, at::kFloat);
      result_.path_bias = at::zeros({points, k_}, at::kFloat);
    }
  }

  PathResult run() {
    for (std::size_t p = 0; p < lambdas_.size(); ++p) solve_point(p);
    return finish();
  }

 private:
  double elapsed() const { return start_.seconds(); }

  // η falls log-linearly from lr to lr / lr_decay_factor over the nonzero λ.
  double point_lr(std::size_t p) const {
    const std::size_t lr_index = std::min(p, nonzero_points_ == 0 ? 0 : nonzero_points_ - 1);
    const double t = nonzero_points_ <= 1
                         ? 0.0
                         : static_cast<double>(lr_index) / static_cast<double>(nonzero_points_ - 1);
    return solver_.lr * std::pow(1.0 / solver_.lr_decay_factor, t);
  }

  // The path's point p: the model fitted at its λ, measured, recorded and reported.
  void solve_point(std::size_t p) {
    const double lr = point_lr(p);
    const at::Tensor lambda =
        at::full({k_}, lambdas_[p], at::TensorOptions(in_.device).dtype(at::kFloat));
    const at::Tensor at_bound = columns_at_bound(
        stats_, at::full({k_}, lambdas_[p], at::TensorOptions().dtype(at::kDouble)), solver_.alpha,
        in_.family);
    // Every column at its bound: the optimum is known, no epochs are needed.
    const bool all_at_bound = at_bound.all().item<bool>();
    std::uint64_t epochs_here = 0;
    const bool converged = all_at_bound || train_until_converged(p, lr, lambda, epochs_here);
    settle_columns_at_bound(state_, stats_, at_bound, in_.family);
    const PathPoint point = measure_point(p, lr, lambda, epochs_here, converged);
    record_point(p, point);
    if (in_.progress) {
      std::ostringstream line;
      line.precision(4);
      line << "λ " << p + 1 << "/" << lambdas_.size() << " = " << point.lambda << ": "
           << epochs_here << " epochs, loss " << point.train_loss;
      if (in_.val != nullptr) line << ", validation " << point.val_loss;
      line << ", " << point.nnz << " nonzero" << (converged ? "" : " (max_epochs reached)");
      in_.progress(line.str());
    }
  }

  // Epochs at λ = lambdas_[p] until the stopping rule says it converged (true) or max_epochs
  // epochs were run (false); `epochs_here` counts them.
  bool train_until_converged(std::size_t p, double lr, const at::Tensor& lambda,
                             std::uint64_t& epochs_here) {
    double best = std::numeric_limits<double>::infinity(), objective = 0;
    std::uint64_t since_best = 0;
    bool converged = false;
    while (!converged && epochs_here < solver_.max_epochs) {
      const double step_tol = solver_.lookbehind == 0 ? solver_.tol : 0.0;
      const double epoch_start = elapsed();
      const EpochLosses losses = train_epoch(state_, train_, ++epoch_, stats_, in_.family, lr,
                                             lambda, solver_.alpha, in_.stop, {}, step_tol);
      ++epochs_here;
      // The running mean over the rows this epoch stepped on, plus the penalty now.
      objective = losses.sums.sum().item<double>() * data_factor_ /
                      static_cast<double>(std::max<std::uint64_t>(losses.rows, 1)) +
                  penalty(state_.weight, lambda, solver_.alpha).sum().item<double>();
      result_.train_seconds += elapsed() - epoch_start;
      result_.rows_stepped += losses.rows;
      if (!std::isfinite(objective)) {
        throw std::runtime_error("the SAGA solve diverged at λ = " + std::to_string(lambdas_[p]) +
                                 " (non-finite loss; the rows' values are finite): lower "
                                 "saga.lr (now " +
                                 std::to_string(lr) + ")");
      }
      if (solver_.lookbehind == 0) {
        converged = losses.small_step;
        continue;
      }
      if (objective + solver_.tol < best) {
        best = objective;
        since_best = 0;
      } else if (++since_best >= solver_.lookbehind) {
        converged = true;
      }
    }
    return converged;
  }

  // The point of λ = lambdas_[p]: its penalty and the data term of its final model over the
  // training and validation rows (one pass each).
  PathPoint measure_point(std::size_t p, double lr, const at::Tensor& lambda,
                          std::uint64_t epochs_here, bool converged) {
    PathPoint point;
    point.lambda = lambdas_[p];
    point.lr = lr;
    point.penalty = penalty(state_.weight, lambda, solver_.alpha).sum().item<double>();
    point.train_loss =
        evaluate_rows(state_, train_, stats_, in_.family, in_.stop).sums.sum().item<double>() *
        data_factor_ / static_cast<double>(train_.rows());
    point.val_loss = point.val_se = std::numeric_limits<double>::quiet_NaN();
    if (in_.val != nullptr) {
      const RowLosses val = evaluate_rows(state_, *in_.val, stats_, in_.family, in_.stop);
      const double n = static_cast<double>(val.rows);
      const double sum = val.sums.sum().item<double>();
      point.val_loss = sum * data_factor_ / n;
      point.val_se = data_factor_ * standard_error(sum, val.row_square_sum.item<double>(), n);
      if (!std::isfinite(point.val_loss)) {
        check_rows_finite(*in_.val, in_.stop);  // throws naming the row
        throw std::runtime_error("the validation loss at λ = " + std::to_string(lambdas_[p]) +
                                 " is not finite: lower saga.lr (now " + std::to_string(lr) + ")");
      }
    }
    point.nnz = static_cast<std::uint64_t>(nonzero_weights(state_.weight));
    point.epochs = epochs_here;
    point.seconds = elapsed();
    point.converged = converged;
    return point;
  }

  // Adds point p to the path (and its model to the kept ones); its model becomes the selected
  // one when the selection now picks it.
  void record_point(std::size_t p, const PathPoint& point) {
    result_.points.push_back(point);
    const at::Tensor weight = state_.weight.to(at::kCPU);
    const at::Tensor bias = state_.bias.to(at::kCPU);
    if (keep_path_) {
      result_.path_weights[static_cast<std::int64_t>(p)].copy_(weight);
      result_.path_bias[static_cast<std::int64_t>(p)].copy_(bias);
    }
    candidates_.push_back(
        {point.lambda, point.val_loss, point.val_se, point.val_loss + point.penalty});
    const std::size_t chosen = select_point(candidates_, solver_.selection);
    if (chosen == p) {  // the model now selected is this one (one_se may still move back)
      result_.weight = weight.clone();
      result_.bias = bias.clone();
      result_.selected_seconds = point.seconds;
    }
    if (!point.converged) ++result_.unfinished;
  }

  PathResult finish() {
    const std::size_t chosen = select_point(candidates_, solver_.selection);
    if (keep_path_) {
      result_.weight = result_.path_weights[static_cast<std::int64_t>(chosen)].clone();
      result_.bias = result_.path_bias[static_cast<std::int64_t>(chosen)].clone();
      result_.selected_seconds = result_.points[chosen].seconds;
    }
    result_.lambda =
        at::full({k_}, result_.points[chosen].lambda, at::TensorOptions().dtype(at::kDouble));
    result_.val_loss =
        at::full({k_}, result_.points[chosen].val_loss, at::TensorOptions().dtype(at::kDouble));
    if (!solver_.path_weights) result_.path_weights = result_.path_bias = at::Tensor();
    result_.epochs = epoch_;
    result_.seconds = elapsed();
    return std::move(result_);
  }

  const Stopwatch start_;
  const SagaSolver& solver_;
  const SolveInputs& in_;
  const RowStats& stats_;
  RowSource& train_;
  const double data_factor_;
  SagaState state_;
  const std::vector<double> lambdas_;
  const std::size_t nonzero_points_;  // the λ before a do_zero λ = 0
  const std::int64_t k_;              // output columns
  // Every point's model, when asked for or when one_se may select an earlier point than the best.
  const bool keep_path_;
  PathResult result_;
  std::vector<Candidate> candidates_;
  std::uint64_t epoch_ = 0;
};

}  // namespace

PathResult solve_elastic_net(const SagaSolver& solver, const SolveInputs& in) {
  return ElasticNetSolve(solver, in).run();
}

}  // namespace ffcv::saga
