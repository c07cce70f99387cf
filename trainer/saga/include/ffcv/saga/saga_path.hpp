// The two regularization paths over the SAGA step (saga_step.hpp), as glm_saga
// (glm_saga/elasticnet.py, MadryLab) and fast_l1 (fast_l1/regressor.py, MadryLab) run them;
// saga_recipe.hpp states both objectives.
//
//   solve_elastic_net  λ from λ_max = max_k gradient_bound_k / max(α, 0.001) down to ε·λ_max
//                      in num_lambdas log-spaced points (or saga.lambdas), then λ = 0 with
//                      do_zero; each λ warm-starts from the last (weights, table and averages)
//                      and runs until look-behind sees no improvement of the epoch's penalized
//                      loss by tol for `lookbehind` epochs (or, lookbehind = 0, a step moves the
//                      model by at most tol), at most max_epochs.
//   solve_lasso_path   every target column its own λ: 0 first, then λ_max,k, then ×ε^{1/m} at
//                      each convergence (m = num_lambdas, m + 1 points in all); convergence is
//                      glmnet's max_j σ_j² Δw_jk² < early_stop_eps over an epoch, checked every
//                      early_stop_freq epochs; a column stops early once its validation error
//                      rises after at least min_lambdas points with more than one nonzero
//                      weight. Finished columns leave the working set, so later epochs cost less.
//
// At a λ at or above a column's KKT bound (λ_max) its weights are set to exactly 0 and its bias
// to its optimum (columns_at_bound): the solver's iterates only approach 0 there, one weight
// sitting on the boundary of the zero region.
//
// Selection (saga.selection), on the validation rows, among the points of the path (elastic_net)
// or of each column's path (lasso_path, whose first point is λ = 0):
//   val_loss            the point of least validation data loss (no penalty): fast_l1's rule
//                       (train_saga's best_lambdas, the λ of least validation MSE per target
//                       among its converged points), and glmnet's lambda.min on one validation
//                       split. The default for both objectives.
//   one_se              the largest λ whose validation loss is within one standard error of that
//                       least loss (glmnet's lambda.1se; the standard error is that of the mean
//                       per-row loss at the least-loss point): sparser, fewer false features.
//   penalized_val_loss  the least validation objective, data loss plus that λ's penalty, as the
//                       objective weighs them: glm_saga's rule (glm_saga's "best", whose
//                       validation loss comes from elastic_loss_and_acc_loader, penalty
//                       included). The penalty is 0 at λ = 0 and the data loss smallest near
//                       it, so this rule leans towards the smallest λ whatever the validation
//                       rows say; it is there to reproduce glm_saga.
// Ties go to the larger λ (the sparser model). Without validation rows the last point of the path
// (the smallest λ reached) is selected.
#pragma once

#include <torch/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_step.hpp"

namespace ffcv::saga {

struct PathPoint {
  std::int64_t target = -1;  // the target column; -1: one λ for every column (elastic_net)
  double lambda = 0;
  double lr = 0;
  // The data term, no penalty. elastic_net: of the λ's final model over the training and the
  // validation rows, (1/2n) Σ‖r‖² or the mean cross-entropy. lasso_path: mean squared error,
  // Σ r²/n, as fast_l1 logs it (training: the running mean over the epoch that converged;
  // validation: exact).
  double train_loss = 0;
  double val_loss = 0;  // NaN without validation rows
  double val_se = 0;    // the standard error of val_loss (NaN without validation rows)
  double penalty = 0;   // the λ's penalty of the final weights (of this column, lasso_path)
  std::uint64_t nnz = 0;
  std::uint64_t epochs = 0;  // elastic_net: spent on this λ; lasso_path: solver epochs so far
  double seconds = 0;        // since the solve started
  bool converged = true;     // false: max_epochs ended it
};

struct PathResult {
  std::vector<PathPoint> points;
  at::Tensor weight;    // [d, K] float32 on the CPU: the selected model, standardized units
  at::Tensor bias;      // [K]
  at::Tensor lambda;    // [K] float64: the selected λ of each column
  at::Tensor val_loss;  // [K] float64: its validation loss (NaN without validation rows)
  // With saga.path_weights: the weights and biases at every point, float32 on the CPU.
  // elastic_net: [points, d, K] and [points, K]; lasso_path: one row per point, [points, d] and
  // [points], of the column that point belongs to (the order of `points`).
  at::Tensor path_weights, path_bias;
  std::uint64_t epochs = 0;        // solver epochs in all
  double seconds = 0;              // solver wall time
  double train_seconds = 0;        // of which in training epochs (no validation passes)
  std::uint64_t rows_stepped = 0;  // rows those epochs stepped on (a last one may end early)
  double selected_seconds = 0;     // when the last selected model was reached
  std::uint64_t unfinished = 0;    // columns that max_epochs stopped mid-path
};

struct SolveInputs {
  RowSource* train = nullptr;
  RowSource* val = nullptr;  // may be null
  const RowStats* stats = nullptr;
  Family family = Family::kGaussian;
  at::Device device = at::kCPU;
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> progress;  // one line at a time; may be empty
};

PathResult solve_elastic_net(const SagaSolver& solver, const SolveInputs& inputs);

// `first_lambda` [K]: the first nonzero λ of each column (λ_max,k on the main path, the chosen λ
// for a refit), `decay` the factor between points after it, `points` the nonzero points.
PathResult solve_lasso_path(const SagaSolver& solver, const SolveInputs& inputs,
                            const at::Tensor& first_lambda, double decay, std::uint64_t points);

// A path point as the selection rules see it: its λ, validation data loss and that loss's
// standard error, and the validation objective (the data loss plus the penalty, weighed as in
// the objective the path minimizes).
struct Candidate {
  double lambda = 0, val_loss = 0, val_se = 0, val_objective = 0;
};
// The position of the selected one of `candidates` (in path order) by `rule` (saga.selection);
// the last one when no val_loss is a number.
std::size_t select_point(const std::vector<Candidate>& candidates, const std::string& rule);

// The standard error of the mean of n values whose sum is `sum` and sum of squares `squares`.
double standard_error(double sum, double squares, double n);

// The λ of the elastic-net path: computed from the bound, or solver.lambdas as given.
std::vector<double> elastic_net_lambdas(const SagaSolver& solver, const RowStats& stats);

}  // namespace ffcv::saga
