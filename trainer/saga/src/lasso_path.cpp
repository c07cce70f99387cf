// fast_l1's path: a lasso per target column, each with its own λ sequence, glmnet's convergence
// rule, validation early stopping, a point of each column's path selected by saga.selection, and a
// working set that sheds finished columns (saga_path.hpp).
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "ffcv/saga/row_source.hpp"

#include "ffcv/saga/saga_path.hpp"
#include "ffcv/stopwatch.hpp"

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

}  // namespace

PathResult solve_lasso_path(const SagaSolver& solver, const SolveInputs& in,
                            const at::Tensor& first_lambda, double decay, std::uint64_t points) {
  const Stopwatch start;
  const auto elapsed = [&] { return start.seconds(); };
  const RowStats& stats = *in.stats;
  RowSource& train = *in.train;
  const auto outputs = static_cast<std::int64_t>(stats.outputs);
  const double n = static_cast<double>(train.rows());
  const at::TensorOptions on_device = at::TensorOptions(in.device).dtype(at::kFloat);

  SagaState state =
      SagaState::zeros(stats.features, stats.outputs, train.range().first + train.rows(),
                       train.rows(), in.device, solver.table == "host");
  at::Tensor lambda = at::zeros({outputs}, on_device);
  const at::Tensor variance = stats.std.square().unsqueeze(1);  // [d, 1]
  const at::Tensor first = first_lambda.to(at::kDouble).contiguous();
  std::vector<Column> columns(static_cast<std::size_t>(outputs));
  std::vector<std::int64_t> active(static_cast<std::size_t>(outputs));  // working position → k
  std::iota(active.begin(), active.end(), 0);

  PathResult result;
  result.weight = at::zeros({static_cast<std::int64_t>(stats.features), outputs}, at::kFloat);
  result.bias = at::zeros({outputs}, at::kFloat);
  result.lambda = at::zeros({outputs}, at::kDouble);
  result.val_loss = at::full({outputs}, std::numeric_limits<double>::quiet_NaN(), at::kDouble);
  std::vector<double> reached(static_cast<std::size_t>(outputs), 0.0);
  // Every point's weights (a [d] column) and bias, when asked for or needed by one_se.
  const bool keep_path = keeps_path_models(solver);
  std::vector<at::Tensor> kept_weights;
  std::vector<float> kept_bias;
  // The working columns at their KKT bound: settled to their exact optimum after every epoch.
  at::Tensor at_bound = at::zeros({outputs}, at::kBool);
  bool any_at_bound = false;

  // Column k's current model as its selected one.
  const auto select = [&](std::size_t position, std::int64_t k, double val) {
    const auto p = static_cast<std::int64_t>(position);
    result.weight.select(1, k).copy_(state.weight.select(1, p).to(at::kCPU));
    result.bias[k] = state.bias[p].item<float>();
    result.lambda[k] = columns[static_cast<std::size_t>(k)].lambda;
    result.val_loss[k] = val;
    columns[static_cast<std::size_t>(k)].has_best = true;
    reached[static_cast<std::size_t>(k)] = elapsed();
  };

  TargetColumns working;  // the targets of the working set's columns
  std::uint64_t epoch = 0;
  while (!active.empty() && epoch < solver.max_epochs) {
    const bool check = (epoch + 1) % solver.early_stop_freq == 0;
    const at::Tensor weight_before = check ? state.weight.clone() : at::Tensor();
    const double epoch_start = elapsed();
    const EpochLosses losses = train_epoch(state, train, ++epoch, stats, Family::kGaussian,
                                           solver.lr, lambda, 1.0, in.stop, working);
    if (any_at_bound) settle_columns_at_bound(state, stats, at_bound, Family::kGaussian, active);
    const at::Tensor& sums = losses.sums;
    const double loss_sum = sums.sum().item<double>();  // waits for the epoch's work
    result.train_seconds += elapsed() - epoch_start;
    result.rows_stepped += losses.rows;
    if (!std::isfinite(loss_sum)) {
      throw std::runtime_error(
          "the SAGA solve diverged (non-finite loss; the rows' values are finite): lower saga.lr "
          "(now " +
          std::to_string(solver.lr) + ")");
    }
    if (!check) continue;
    // glmnet's rule: max_j σ_j² (Δw_jk)² over the epoch, per column.
    const at::Tensor delta = (variance * (state.weight - weight_before).square()).amax(0);
    const at::Tensor converged_now = (delta < solver.early_stop_eps).to(at::kCPU);
    if (!converged_now.any().item<bool>()) continue;
    // This check's figures per working position, on the host.
    const at::Tensor train_mse = (sums / n).to(at::kCPU).to(at::kDouble);
    const at::Tensor nnz = nonzero_per_column(state.weight).to(at::kCPU);
    at::Tensor val_sums, val_squares;
    if (in.val != nullptr) {
      const RowLosses val =
          evaluate_rows(state, *in.val, stats, Family::kGaussian, in.stop, working);
      val_sums = val.sums.to(at::kCPU);
      val_squares = val.square_sums.to(at::kCPU);
      if (!at::isfinite(val_sums).all().item<bool>()) {
        check_rows_finite(*in.val, in.stop);  // throws naming the row
        throw std::runtime_error("the validation loss is not finite: lower saga.lr (now " +
                                 std::to_string(solver.lr) + ")");
      }
    }
    const at::Tensor l1 = state.weight.abs().sum(0).to(at::kCPU).to(at::kDouble);
    const double n_val = in.val != nullptr ? static_cast<double>(in.val->rows()) : 0.0;
    const auto converged = converged_now.accessor<bool, 1>();
    const auto train_of = train_mse.accessor<double, 1>();
    const auto nnz_of = nnz.accessor<std::int64_t, 1>();
    std::vector<std::int64_t> keep;
    std::uint64_t stepped = 0, finished = 0;
    at::Tensor next_lambda = lambda.to(at::kCPU).to(at::kDouble);
    for (std::size_t position = 0; position < active.size(); ++position) {
      const auto p = static_cast<std::int64_t>(position);
      const std::int64_t k = active[position];
      Column& column = columns[static_cast<std::size_t>(k)];
      if (!converged[p]) {
        keep.push_back(p);
        continue;
      }
      PathPoint point;
      point.target = k;
      point.lambda = column.lambda;
      point.lr = solver.lr;
      point.train_loss = train_of[p];
      point.val_loss = point.val_se = std::numeric_limits<double>::quiet_NaN();
      if (in.val != nullptr) {
        const double sum = val_sums[p].item<double>();
        point.val_loss = sum / n_val;
        point.val_se = standard_error(sum, val_squares[p].item<double>(), n_val);
      }
      point.penalty = column.lambda * l1[p].item<double>();
      point.nnz = static_cast<std::uint64_t>(nnz_of[p]);
      point.epochs = epoch;
      point.seconds = elapsed();
      column.point_indices.push_back(result.points.size());
      result.points.push_back(point);
      if (keep_path) {
        kept_weights.push_back(state.weight.select(1, p).to(at::kCPU).clone());
        kept_bias.push_back(state.bias[p].item<float>());
      }
      ++column.points_done;
      bool stop_column = column.points_done > points;
      // The objective weighs the data term as (1/2n) Σ r², half the MSE.
      column.candidates.push_back(
          {point.lambda, point.val_loss, point.val_se, point.val_loss / 2 + point.penalty});
      if (select_point(column.candidates, solver.selection) == column.candidates.size() - 1) {
        select(position, k, point.val_loss);
      }
      // Validation early stopping (fast_l1's): the error rose, enough λ were tried, the model is
      // sparse but not empty.
      if (in.val != nullptr) {
        if (point.val_loss > column.last_val && column.points_done >= solver.min_lambdas &&
            point.nnz > 1) {
          stop_column = true;
        }
        column.last_val = point.val_loss;
      }
      if (stop_column) {
        ++finished;
        continue;
      }
      column.lambda = column.points_done == 1 ? first[k].item<double>() : column.lambda * decay;
      next_lambda[p] = column.lambda;
      keep.push_back(p);
      ++stepped;
    }
    lambda = next_lambda.to(at::kFloat).to(in.device);
    at_bound = columns_at_bound(stats, next_lambda, 1.0, Family::kGaussian, active);
    any_at_bound = at_bound.any().item<bool>();
    if (finished > 0) {
      std::vector<std::int64_t> still;
      for (const std::int64_t position : keep) {
        still.push_back(active[static_cast<std::size_t>(position)]);
      }
      keep_columns(state, lambda, keep);
      at_bound = at_bound.index_select(0, at::tensor(keep, at::kLong));
      any_at_bound = at_bound.any().item<bool>();
      active = std::move(still);
      working.columns = at::tensor(active, at::kLong).to(in.device);
    }
    if (in.progress) {
      std::ostringstream line;
      line << "epoch " << epoch << ": " << stepped << " of " << outputs
           << " columns converged and went on to their next λ, " << finished << " finished; "
           << active.size() << " still on their path";
      in.progress(line.str());
    }
  }
  // Columns that max_epochs stopped keep their best point so far, or where they stand.
  for (std::size_t position = 0; position < active.size(); ++position) {
    const std::int64_t k = active[position];
    ++result.unfinished;
    if (!columns[static_cast<std::size_t>(k)].has_best) select(position, k, NAN);
  }
  // one_se may select a point before the best: from the kept weights.
  if (keep_path) {
    for (std::int64_t k = 0; k < outputs; ++k) {
      const Column& column = columns[static_cast<std::size_t>(k)];
      if (column.candidates.empty()) continue;
      const std::size_t index =
          column.point_indices[select_point(column.candidates, solver.selection)];
      result.weight.select(1, k).copy_(kept_weights[index]);
      result.bias[k] = kept_bias[index];
      result.lambda[k] = result.points[index].lambda;
      result.val_loss[k] = result.points[index].val_loss;
      reached[static_cast<std::size_t>(k)] = result.points[index].seconds;
    }
  }
  if (solver.path_weights) {
    result.path_weights =
        kept_weights.empty() ? at::zeros({0, static_cast<std::int64_t>(stats.features)}, at::kFloat)
                             : at::stack(kept_weights);
    kept_weights.clear();
    result.path_bias = at::tensor(kept_bias, at::kFloat);
  }
  result.epochs = epoch;
  result.seconds = elapsed();
  for (const double when : reached)
    result.selected_seconds = std::max(result.selected_seconds, when);
  return result;
}

}  // namespace ffcv::saga
