// fast_l1's path: a lasso per target column, each with its own λ sequence, glmnet's convergence
// rule, validation early stopping, a point of each column's path selected by saga.selection, and a
// working set that sheds finished columns (saga_path.hpp).
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "ffcv/saga/row_source.hpp"

#include "ffcv/saga/saga_path.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::saga {
namespace {

// Where one column stands on its path.
struct Column {
  std::uint64_t points_done = 0;  // converged λ so far (the first is λ = 0)
  double lambda = 0;
  double last_val = std::numeric_limits<double>::infinity();
  bool has_best = false;
  std::vector<Candidate> candidates;       // its points, as the selection sees them
  std::vector<std::size_t> point_indices;  // where they are in the result's points
};

// Keeps the columns of `state` (and `lambda`) at positions `keep`.
void keep_columns(SagaState& state, at::Tensor& lambda, const std::vector<std::int64_t>& keep) {
  const at::Tensor index = at::tensor(keep, at::kLong);
  const at::Tensor on_device = index.to(state.weight.device());
  state.weight = state.weight.index_select(1, on_device);
  state.bias = state.bias.index_select(0, on_device);
  state.mean_grad_weight = state.mean_grad_weight.index_select(1, on_device);
  state.mean_grad_bias = state.mean_grad_bias.index_select(0, on_device);
  state.table = state.table.index_select(1, index.to(state.table.device()));
  lambda = lambda.index_select(0, on_device);
}

// What one convergence check measured, per working position, on the host.
struct CheckFigures {
  at::Tensor train_mse;              // float64: the epoch's running training MSE
  at::Tensor nnz;                    // int64
  at::Tensor val_sums, val_squares;  // undefined without validation rows
  at::Tensor l1;                     // float64: Σ_j |w_jk|
  double n_val = 0;                  // validation rows
};

// One run of the lasso path: the working set of columns, their state on the path, and the result
// gathered so far.
class LassoPathSolve {
 public:
  LassoPathSolve(const SagaSolver& solver, const SolveInputs& in, const at::Tensor& first_lambda,
                 double decay, std::uint64_t points)
      : solver_(solver),
        in_(in),
        decay_(decay),
        points_(points),
        stats_(*in.stats),
        train_(*in.train),
        outputs_(static_cast<std::int64_t>(stats_.outputs)),
        n_(static_cast<double>(train_.rows())),
        state_(SagaState::zeros(stats_.features, stats_.outputs,
                                train_.range().first + train_.rows(), train_.rows(), in.device,
                                solver.table == "host")),
        lambda_(at::zeros({outputs_}, at::TensorOptions(in.device).dtype(at::kFloat))),
        variance_(stats_.std.square().unsqueeze(1)),  // [d, 1]
        first_(first_lambda.to(at::kDouble).contiguous()),
        columns_(static_cast<std::size_t>(outputs_)),
        active_(static_cast<std::size_t>(outputs_)),
        reached_(static_cast<std::size_t>(outputs_), 0.0),
        keep_path_(keeps_path_models(solver)),
        at_bound_(at::zeros({outputs_}, at::kBool)) {
    std::iota(active_.begin(), active_.end(), 0);
    result_.weight = at::zeros({static_cast<std::int64_t>(stats_.features), outputs_}, at::kFloat);
    result_.bias = at::zeros({outputs_}, at::kFloat);
    result_.lambda = at::zeros({outputs_}, at::kDouble);
    result_.val_loss = at::full({outputs_}, std::numeric_limits<double>::quiet_NaN(), at::kDouble);
  }

  PathResult run() {
    while (!active_.empty() && epoch_ < solver_.max_epochs) {
      const bool check = (epoch_ + 1) % solver_.early_stop_freq == 0;
      const at::Tensor weight_before = check ? state_.weight.clone() : at::Tensor();
      const at::Tensor sums = train_one_epoch();
      if (!check) continue;
      // glmnet's rule: max_j σ_j² (Δw_jk)² over the epoch, per column.
      const at::Tensor delta = (variance_ * (state_.weight - weight_before).square()).amax(0);
      const at::Tensor converged_now = (delta < solver_.early_stop_eps).to(at::kCPU);
      if (!converged_now.any().item<bool>()) continue;
      advance_converged(converged_now, measure_check(sums));
    }
    return finish();
  }

 private:
  double elapsed() const { return start_.seconds(); }

  // One epoch over the working columns; returns its loss sums per working position.
  at::Tensor train_one_epoch() {
    const double epoch_start = elapsed();
    const EpochLosses losses = train_epoch(state_, train_, ++epoch_, stats_, Family::kGaussian,
                                           solver_.lr, lambda_, 1.0, in_.stop, working_);
    if (any_at_bound_) {
      settle_columns_at_bound(state_, stats_, at_bound_, Family::kGaussian, active_);
    }
    const at::Tensor& sums = losses.sums;
    const double loss_sum = sums.sum().item<double>();  // waits for the epoch's work
    result_.train_seconds += elapsed() - epoch_start;
    result_.rows_stepped += losses.rows;
    if (!std::isfinite(loss_sum)) {
      throw std::runtime_error(
          "the SAGA solve diverged (non-finite loss; the rows' values are finite): lower saga.lr "
          "(now " +
          std::to_string(solver_.lr) + ")");
    }
    return sums;
  }

  // This check's figures per working position, on the host (one validation pass).
  CheckFigures measure_check(const at::Tensor& sums) {
    CheckFigures figures;
    figures.train_mse = (sums / n_).to(at::kCPU).to(at::kDouble);
    figures.nnz = nonzero_per_column(state_.weight).to(at::kCPU);
    if (in_.val != nullptr) {
      const RowLosses val =
          evaluate_rows(state_, *in_.val, stats_, Family::kGaussian, in_.stop, working_);
      figures.val_sums = val.sums.to(at::kCPU);
      figures.val_squares = val.square_sums.to(at::kCPU);
      if (!at::isfinite(figures.val_sums).all().item<bool>()) {
        check_rows_finite(*in_.val, in_.stop);  // throws naming the row
        throw std::runtime_error("the validation loss is not finite: lower saga.lr (now " +
                                 std::to_string(solver_.lr) + ")");
      }
    }
    figures.l1 = state_.weight.abs().sum(0).to(at::kCPU).to(at::kDouble);
    figures.n_val = in_.val != nullptr ? static_cast<double>(in_.val->rows()) : 0.0;
    return figures;
  }

  // The columns that converged at this check record their point and go on to their next λ, or
  // finish and leave the working set.
  void advance_converged(const at::Tensor& converged_now, const CheckFigures& figures) {
    const auto converged = converged_now.accessor<bool, 1>();
    std::vector<std::int64_t> keep;
    std::uint64_t stepped = 0, finished = 0;
    at::Tensor next_lambda = lambda_.to(at::kCPU).to(at::kDouble);
    for (std::size_t position = 0; position < active_.size(); ++position) {
      const auto p = static_cast<std::int64_t>(position);
      const std::int64_t k = active_[position];
      Column& column = columns_[static_cast<std::size_t>(k)];
      if (!converged[p]) {
        keep.push_back(p);
        continue;
      }
      if (record_point(position, k, column, figures)) {
        ++finished;
        continue;
      }
      column.lambda = column.points_done == 1 ? first_[k].item<double>() : column.lambda * decay_;
      next_lambda[p] = column.lambda;
      keep.push_back(p);
      ++stepped;
    }
    lambda_ = next_lambda.to(at::kFloat).to(in_.device);
    at_bound_ = columns_at_bound(stats_, next_lambda, 1.0, Family::kGaussian, active_);
    any_at_bound_ = at_bound_.any().item<bool>();
    if (finished > 0) keep_working(keep);
    if (in_.progress) {
      std::ostringstream line;
      line << "epoch " << epoch_ << ": " << stepped << " of " << outputs_
           << " columns converged and went on to their next λ, " << finished << " finished; "
           << active_.size() << " still on their path";
      in_.progress(line.str());
    }
  }

  // Column k (at working `position`) converged: its point joins the path (and the selection).
  // Returns whether the column's path ends there.
  bool record_point(std::size_t position, std::int64_t k, Column& column,
                    const CheckFigures& figures) {
    const auto p = static_cast<std::int64_t>(position);
    PathPoint point;
    point.target = k;
    point.lambda = column.lambda;
    point.lr = solver_.lr;
    point.train_loss = figures.train_mse.accessor<double, 1>()[p];
    point.val_loss = point.val_se = std::numeric_limits<double>::quiet_NaN();
    if (in_.val != nullptr) {
      const double sum = figures.val_sums[p].item<double>();
      point.val_loss = sum / figures.n_val;
      point.val_se = standard_error(sum, figures.val_squares[p].item<double>(), figures.n_val);
    }
    point.penalty = column.lambda * figures.l1[p].item<double>();
    point.nnz = static_cast<std::uint64_t>(figures.nnz.accessor<std::int64_t, 1>()[p]);
    point.epochs = epoch_;
    point.seconds = elapsed();
    column.point_indices.push_back(result_.points.size());
    result_.points.push_back(point);
    if (keep_path_) {
      kept_weights_.push_back(state_.weight.select(1, p).to(at::kCPU).clone());
      kept_bias_.push_back(state_.bias[p].item<float>());
    }
    ++column.points_done;
    bool stop_column = column.points_done > points_;
    // The objective weighs the data term as (1/2n) Σ r², half the MSE.
    column.candidates.push_back(
        {point.lambda, point.val_loss, point.val_se, point.val_loss / 2 + point.penalty});
    if (select_point(column.candidates, solver_.selection) == column.candidates.size() - 1) {
      select(position, k, point.val_loss);
    }
    // Validation early stopping (fast_l1's): the error rose, enough λ were tried, the model is
    // sparse but not empty.
    if (in_.val != nullptr) {
      if (point.val_loss > column.last_val && column.points_done >= solver_.min_lambdas &&
          point.nnz > 1) {
        stop_column = true;
      }
      column.last_val = point.val_loss;
    }
    return stop_column;
  }

  // Column k's current model (at working `position`) as its selected one.
  void select(std::size_t position, std::int64_t k, double val) {
    const auto p = static_cast<std::int64_t>(position);
    result_.weight.select(1, k).copy_(state_.weight.select(1, p).to(at::kCPU));
    result_.bias[k] = state_.bias[p].item<float>();
    result_.lambda[k] = columns_[static_cast<std::size_t>(k)].lambda;
    result_.val_loss[k] = val;
    columns_[static_cast<std::size_t>(k)].has_best = true;
    reached_[static_cast<std::size_t>(k)] = elapsed();
  }

  // Shrinks the working set to its positions `keep`.
  void keep_working(const std::vector<std::int64_t>& keep) {
    std::vector<std::int64_t> still;
    for (const std::int64_t position : keep) {
      still.push_back(active_[static_cast<std::size_t>(position)]);
    }
    keep_columns(state_, lambda_, keep);
    at_bound_ = at_bound_.index_select(0, at::tensor(keep, at::kLong));
    any_at_bound_ = at_bound_.any().item<bool>();
    active_ = std::move(still);
    working_.columns = at::tensor(active_, at::kLong).to(in_.device);
  }

  PathResult finish() {
    // Columns that max_epochs stopped keep their best point so far, or where they stand.
    for (std::size_t position = 0; position < active_.size(); ++position) {
      const std::int64_t k = active_[position];
      ++result_.unfinished;
      if (!columns_[static_cast<std::size_t>(k)].has_best) select(position, k, NAN);
    }
    if (keep_path_) select_kept_points();
    if (solver_.path_weights) {
      result_.path_weights =
          kept_weights_.empty()
              ? at::zeros({0, static_cast<std::int64_t>(stats_.features)}, at::kFloat)
              : at::stack(kept_weights_);
      kept_weights_.clear();
      result_.path_bias = at::tensor(kept_bias_, at::kFloat);
    }
    result_.epochs = epoch_;
    result_.seconds = elapsed();
    for (const double when : reached_)
      result_.selected_seconds = std::max(result_.selected_seconds, when);
    return std::move(result_);
  }

  // one_se may select a point before the best: each column's selected point, from the kept
  // weights.
  void select_kept_points() {
    for (std::int64_t k = 0; k < outputs_; ++k) {
      const Column& column = columns_[static_cast<std::size_t>(k)];
      if (column.candidates.empty()) continue;
      const std::size_t index =
          column.point_indices[select_point(column.candidates, solver_.selection)];
      result_.weight.select(1, k).copy_(kept_weights_[index]);
      result_.bias[k] = kept_bias_[index];
      result_.lambda[k] = result_.points[index].lambda;
      result_.val_loss[k] = result_.points[index].val_loss;
      reached_[static_cast<std::size_t>(k)] = result_.points[index].seconds;
    }
  }

  const Stopwatch start_;
  const SagaSolver& solver_;
  const SolveInputs& in_;
  const double decay_;
  const std::uint64_t points_;  // nonzero points per column
  const RowStats& stats_;
  RowSource& train_;
  const std::int64_t outputs_;
  const double n_;  // training rows

  SagaState state_;
  at::Tensor lambda_;          // [working columns] float32 on the device
  const at::Tensor variance_;  // [d, 1]
  const at::Tensor first_;     // [K] float64: each column's first nonzero λ
  std::vector<Column> columns_;
  std::vector<std::int64_t> active_;  // working position → k
  TargetColumns working_;             // the targets of the working set's columns
  std::uint64_t epoch_ = 0;

  PathResult result_;
  std::vector<double> reached_;  // when each column's selected model was reached
  // Every point's weights (a [d] column) and bias, when asked for or needed by one_se.
  const bool keep_path_;
  std::vector<at::Tensor> kept_weights_;
  std::vector<float> kept_bias_;
  // The working columns at their KKT bound: settled to their exact optimum after every epoch.
  at::Tensor at_bound_;
  bool any_at_bound_ = false;
};

}  // namespace

PathResult solve_lasso_path(const SagaSolver& solver, const SolveInputs& in,
                            const at::Tensor& first_lambda, double decay, std::uint64_t points) {
  return LassoPathSolve(solver, in, first_lambda, decay, points).run();
}

}  // namespace ffcv::saga
