// The two regularization paths over the SAGA step (saga_step.hpp), as glm_saga and fast_l1 run
// them (training-recipes.md §3.1 and §3.2; saga_recipe.hpp states both objectives).
//
//   solve_elastic_net  λ from λ_max = max_k gradient_bound_k / max(α, 0.001) down to ε·λ_max
//                      in num_lambdas log-spaced points (or saga.lambdas), then λ = 0 with
//                      do_zero; each λ warm-starts from the last (weights, table and averages)
//                      and runs until look-behind sees no improvement of the epoch's penalized
//                      loss by tol for `lookbehind` epochs (or, lookbehind = 0, a step moves the
//                      model by at most tol), at most max_epochs. The path point of least
//                      penalized validation loss is selected (the last without validation rows).
//   solve_lasso_path   every target column its own λ: 0 first, then λ_max,k, then ×ε^{1/m} at
//                      each convergence (m = num_lambdas, m + 1 points in all); convergence is
//                      glmnet's max_j σ_j² Δw_jk² < early_stop_eps over an epoch, checked every
//                      early_stop_freq epochs; a column stops early once its validation error
//                      rises after at least min_lambdas points with more than one nonzero
//                      weight, and keeps the λ of least validation error. Finished columns leave
//                      the working set, so later epochs cost less.
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
  // elastic_net: the objective, penalty included, of the λ's final model over the training and
  // the validation rows. lasso_path: mean squared error, Σ r²/n, as fast_l1 logs it (training:
  // the running mean over the epoch that converged; validation: exact).
  double train_loss = 0;
  double val_loss = 0;  // NaN without validation rows
  std::uint64_t nnz = 0;
  std::uint64_t epochs = 0;  // elastic_net: spent on this λ; lasso_path: solver epochs so far
  double seconds = 0;        // since the solve started
  bool converged = true;     // false: max_epochs ended it
};

struct PathResult {
  std::vector<PathPoint> points;
  at::Tensor weight;         // [d, K] float32 on the CPU: the selected model, standardized units
  at::Tensor bias;           // [K]
  at::Tensor lambda;         // [K] float64: the selected λ of each column
  at::Tensor val_loss;       // [K] float64: its validation loss (NaN without validation rows)
  at::Tensor path_weights;   // elastic_net: [points, d, K], the weights at every λ
  std::uint64_t epochs = 0;  // solver epochs in all
  double seconds = 0;        // solver wall time
  double train_seconds = 0;  // of which in training epochs (no validation passes)
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

// The λ of the elastic-net path: computed from the bound, or solver.lambdas as given.
std::vector<double> elastic_net_lambdas(const SagaSolver& solver, const RowStats& stats);

}  // namespace ffcv::saga
