// The proximal SAGA step and what it needs: the statistics that standardize the features and
// bound the path (one pass over the training rows), the solver state, the penalty and the
// losses. Everything runs on the tensors' device (CPU or CUDA), batch by batch, without host
// synchronization inside an epoch.
//
// SAGA (Defazio, Bach, Lacoste-Julien 2014) with minibatches, as glm_saga and fast_l1 run it
// (glm_saga/elasticnet.py's train_saga, fast_l1/regressor.py's train_saga): for a linear model the
// gradient of row i's loss is aᵢ x̃ᵢᵀ with aᵢ ∈ ℝ^K (the residual, or softmax minus one-hot), so the
// table keeps only aᵢ, one row of K numbers per dataset row. For a batch B:
//   V_W = (1/|B|) X̃_Bᵀ (a − A_B) + Ḡ_W      V_b = mean(a − A_B) + ḡ_b
//   W ← prox(W − η V_W)                       b ← b − η V_b
//   Ḡ_W += (|B|/n)(1/|B|) X̃_Bᵀ (a − A_B)     ḡ_b += (|B|/n) mean(a − A_B)      A_B ← a
// with prox(z) = sign(z)·max(|z| − ηλα, 0) / (1 + ηλ(1 − α)) column by column (λ may differ
// per output column: fast_l1's per-target paths).
#pragma once

#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "ffcv/saga/row_source.hpp"

namespace ffcv::saga {

enum class Family {
  kGaussian,     // squared loss, K real targets
  kMultinomial,  // cross-entropy over K classes, one integer label per row
};

// What one pass over the training rows measures. λ_max is the KKT bound of the standardized
// problem: at W = 0 (and the optimal bias) the gradient of the data term for weight (j, k) is
// (1/n) Σᵢ x̃_ij (Ȳ_k − Y_ik), Y one-hot for classes, so every weight of column k stays 0 exactly
// when λα ≥ max_j |that|.
struct RowStats {
  at::Tensor mean;            // [d] float32 on the device
  at::Tensor std;             // [d] float32: population standard deviation (1/n)
  at::Tensor inv_std;         // [d] 1/std, 0 where std is 0 (a constant feature stays 0)
  at::Tensor gradient_bound;  // [K] float64 on the CPU: max_j |(1/n) Σᵢ x̃_ij (Y_ik − Ȳ_k)|
  at::Tensor target_mean;     // [K] float64 on the CPU: Ȳ (class frequencies for kMultinomial)
  std::uint64_t rows = 0, features = 0, outputs = 0;

  // The model's outputs x̃W + b for raw features x, without forming x̃: x (inv_std ⊙ W) +
  // (b − (mean ⊙ inv_std)ᵀ W), which costs d·K operations per batch instead of B·d.
  at::Tensor linear(const at::Tensor& features, const at::Tensor& weight,
                    const at::Tensor& bias) const;
  // X̃ᵀ D for raw features X and a [B, K] D: inv_std ⊙ (Xᵀ D − mean (1ᵀ D)).
  at::Tensor transposed_product(const at::Tensor& features, const at::Tensor& right) const;
};

// One pass over `source` (epoch `epoch` of its order). For kMultinomial, K is the number of
// classes (largest label + 1). Throws SolveStopped when `stop` is set, and ConfigError naming the
// row when a feature or target is NaN or infinite (check_rows_finite).
RowStats measure_rows(RowSource& source, Family family, std::uint64_t epoch,
                      const std::atomic<bool>* stop);

// The wall time of one pass over `source` (epoch `epoch` of its order) that only takes each
// batch's features to the device as float32 and sums them (so that nothing is skipped and, on
// CUDA, the time includes the device work): the streaming limit of a solver epoch.
double stream_seconds(RowSource& source, std::uint64_t epoch, const std::atomic<bool>* stop);

struct SolveStopped : std::exception {
  const char* what() const noexcept override { return "stopped"; }
};

struct SagaState {
  at::Tensor weight;            // [d, K]
  at::Tensor bias;              // [K]
  at::Tensor table;             // [dataset rows, K]: each row's last a (zeros before its visit)
  at::Tensor mean_grad_weight;  // [d, K]: Ḡ_W
  at::Tensor mean_grad_bias;    // [K]:    ḡ_b
  std::uint64_t rows = 0;       // n, the rows the averages are over

  // All zeros. `table_rows`: one more than the largest dataset row the solve visits; the table
  // lives on the CPU (pinned when `device` is CUDA) when `table_on_host`.
  static SagaState zeros(std::uint64_t features, std::uint64_t outputs, std::uint64_t table_rows,
                         std::uint64_t rows, at::Device device, bool table_on_host);
};

// The data loss of a batch, summed over its rows, per output column [K] for kGaussian (Σ r²,
// without the ½) and in one number [1] for kMultinomial (Σ cross-entropy); on the device.
at::Tensor batch_loss_sums(const at::Tensor& residual_or_logits, const at::Tensor& targets,
                           Family family);

// The columns whose λ_k reaches the KKT bound, λ_k α ≥ gradient_bound_k: at the optimum every
// weight of such a column is exactly 0, and its bias fits Ȳ_k. For kGaussian the columns are
// independent; for kMultinomial they are coupled through the softmax, so either every column is
// at its bound (λα ≥ max_k gradient_bound_k) or none is. `lambda` [K'] float64 on the CPU, for the
// columns `columns` of the problem (empty: all K). Returns [K'] bool on the CPU.
at::Tensor columns_at_bound(const RowStats& stats, const at::Tensor& lambda, double alpha,
                            Family family, const std::vector<std::int64_t>& columns = {});

// Puts the columns `at_bound` ([K'] bool, as columns_at_bound gives) of `state` at that optimum:
// weights exactly 0, bias log Ȳ_k (multinomial, when every class occurs) or Ȳ_k (gaussian).
// The SAGA table is left as it is: it only holds control variates, which stay valid.
void settle_columns_at_bound(SagaState& state, const RowStats& stats, const at::Tensor& at_bound,
                             Family family, const std::vector<std::int64_t>& columns = {});

// One step on a batch (its raw features, standardized through `stats`) and the targets the
// state's columns fit
// (`targets`: the batch's, or a selection of its columns); `lambda` is [K] (float32, device).
// Returns the batch's loss sums at the weights before the step.
at::Tensor saga_step(SagaState& state, const RowStats& stats, const at::Tensor& targets,
                     const RowBatch& batch, Family family, double lr, const at::Tensor& lambda,
                     double alpha);

// The targets the state's columns fit: every column, or those in `columns` (a lasso path's
// working set, [K'] int64 on the device; undefined: all).
struct TargetColumns {
  at::Tensor columns;
  at::Tensor of(const at::Tensor& targets) const {
    return columns.defined() ? targets.index_select(1, columns) : targets;
  }
};

// What an epoch of steps saw.
struct EpochLosses {
  at::Tensor sums;          // the batches' loss sums (each at the weights before its step),
                            // float64 on the device: the running training loss times `rows`
  std::uint64_t rows = 0;   // rows stepped on (fewer than the source's when it ended early)
  bool small_step = false;  // it ended early on the step-size rule
};

// One epoch of steps over `source` (epoch `epoch` of its order). With `step_tol` > 0 the epoch
// ends early after the first step that moved (W, b) by at most step_tol in Euclidean norm
// (glm_saga without look-behind; this costs one host synchronization per batch). Throws
// SolveStopped when `stop` is set.
EpochLosses train_epoch(SagaState& state, RowSource& source, std::uint64_t epoch,
                        const RowStats& stats, Family family, double lr, const at::Tensor& lambda,
                        double alpha, const std::atomic<bool>* stop,
                        const TargetColumns& columns = {}, double step_tol = 0);

// The losses of the model over every row of `source` (in its epoch-0 order), float64 on the
// device, with what a standard error of their mean needs.
struct RowLosses {
  at::Tensor sums;         // as batch_loss_sums: per column Σ r² [K], or Σ CE [1]
  at::Tensor square_sums;  // Σ over rows of each row's loss squared: per column Σ r⁴, Σ CE²
  at::Tensor row_square_sum;  // [1]: Σ over rows of (the row's loss over all columns)²
  std::uint64_t rows = 0;
};
RowLosses evaluate_rows(const SagaState& state, RowSource& source, const RowStats& stats,
                        Family family, const std::atomic<bool>* stop,
                        const TargetColumns& columns = {});

// λ_k (α‖w_k‖₁ + (1−α)/2 ‖w_k‖²) for each column k: [K] on the device.
at::Tensor penalty(const at::Tensor& weight, const at::Tensor& lambda, double alpha);

// Weights that count as nonzero: |w| > 1e-5 (glm_saga's rule; the proximal step makes exact
// zeros, the threshold only keeps float noise near a kink from counting).
inline constexpr double kNonzeroWeight = 1e-5;
at::Tensor nonzero_per_column(const at::Tensor& weight);  // [K] int64
std::int64_t nonzero_weights(const at::Tensor& weight);

}  // namespace ffcv::saga
