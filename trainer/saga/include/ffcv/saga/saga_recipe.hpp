// SAGA recipes: one TOML file describes a sparse-regression solve fed by the loader (the FFCV
// paper's fourth case study): which rows of which .beton are the training and validation sets,
// how they are loaded (our loader, or the memory-mapped .npy baseline with the same batches),
// and the solver, its objective and its regularization path.
//
// A SAGA recipe is told apart from a training recipe by its [saga] table; `ffcv run` runs
// either. Reading is as strict as the training recipe's (ffcv/train/recipe_schema.hpp): every
// key is listed once in saga_recipe.cpp's table, with its rule. docs/recipes.md lists every key.
//
// The two objectives (features x̃ standardized with the training rows' mean and population
// standard deviation; the bias is never penalized):
//   elastic_net  glm_saga (Wong, Santurkar, Madry 2021): one λ path for all K outputs,
//                  gaussian:    (1/2n) Σᵢ ‖x̃ᵢᵀW + b − yᵢ‖² + λα‖W‖₁ + λ(1−α)/2 ‖W‖²
//                  multinomial: (1/n)  Σᵢ CE(x̃ᵢᵀW + b, yᵢ)  + the same penalty
//                warm-started from λ_max down to ε·λ_max, one point selected on the
//                validation rows by saga.selection (saga_path.hpp states the rules).
//   lasso_path   fast_l1 (the datamodels regressor): K independent lassos, one per target column,
//                  (1/2n) Σᵢ (x̃ᵢᵀw_k + b_k − y_ik)² + λ_k‖w_k‖₁
//                each with its own path λ = 0, λ_max,k, λ_max,k·ε^{1/m}, ... (m = num_lambdas),
//                stepping on when glmnet's rule says the column converged, stopping early when
//                the validation error rises, each column's point selected by saga.selection;
//                then refit on training + validation rows at each column's selected λ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/settings/loader_settings.hpp"

namespace ffcv::saga {

// [data]: where the rows come from and how they are loaded: the loader's settings (every key of
// ffcv/settings/loader_settings.hpp; here the training rows' order defaults to RANDOM and the
// last, short batch is kept) and the rows' own keys.
struct SagaData : LoaderSettings {
  SagaData() {
    order = "random";
    drop_last = false;
  }

  std::string train;                  // the .beton (path or http(s):// URL); required
  std::string features = "features";  // NDArray field: float32, float16, bool or packed bits
  std::string targets = "target";     // Float, Int (class labels) or NDArray (K targets) field
  // Rows [0, num_train) train, [num_train, num_train + num_val) validate. num_train 0: every
  // row that is not a validation row.
  std::uint64_t num_train = 0;
  std::uint64_t num_val = 0;
  // Features written with `ffcv write npy --pack-bits`: the number of features d (the stored
  // bytes hold ceil(d/8) x 8 bits). 0: as the file says (features_packed).
  std::uint64_t mask_bits = 0;
  // Whether uint8 features are bit-packed masks. "auto": as `ffcv write npy --pack-bits` left
  // them, its sidecar TRAIN.sources.json naming d (packed_bits), or mask_bits; uint8 features
  // with neither are refused, since packed bytes fitted as values give a model of nothing.
  // "no": the bytes are the feature values (a sidecar saying they are packed is refused).
  std::string features_packed = "auto";
  // "ffcv": our loader. "mmap": the baseline, a plain loader that copies each batch's rows out
  // of memory-mapped .npy arrays (features_npy, targets_npy: the arrays the .beton was written
  // from), in the same order and batches.
  std::string loader = "ffcv";
  std::string features_npy;
  std::string targets_npy;
  std::uint64_t batch_size = 100;

  bool operator==(const SagaData&) const = default;
};

// [saga]: the objective, the path and the solver.
struct SagaSolver {
  std::string objective = "elastic_net";  // elastic_net | lasso_path
  std::string family = "gaussian";        // elastic_net: gaussian | multinomial
  double alpha = 0.99;                    // elastic_net: L1 share of the penalty (1 = lasso)
  double lr = 0.1;                        // step size η
  double lr_decay_factor = 1;  // elastic_net: η falls log-linearly to lr / this along the path
  std::uint64_t num_lambdas = 100;    // path points after λ_max (lasso_path) / in all
  double epsilon = 1e-3;              // λ_min / λ_max
  std::vector<double> lambdas;        // elastic_net: these λ instead of the computed path
  bool do_zero = true;                // elastic_net: end the path with λ = 0
  std::uint64_t max_epochs = 2000;    // elastic_net: per λ; lasso_path: in all
  double tol = 1e-4;                  // elastic_net stopping tolerance
  std::uint64_t lookbehind = 3;       // elastic_net: epochs without improvement; 0: step-size rule
  std::uint64_t early_stop_freq = 2;  // lasso_path: epochs between convergence checks
  double early_stop_eps = 1e-5;       // lasso_path: glmnet's max_j σ_j² Δw_jk² bound
  std::uint64_t min_lambdas = 10;     // lasso_path: λ tried before validation may stop
  bool refit = true;                  // lasso_path: refit on train + val at the best λ
  // How a path point is selected on the validation rows (saga_path.hpp): "val_loss" (the least
  // validation data loss), "one_se" (the largest λ within one standard error of it) or
  // "penalized_val_loss" (glm_saga's rule: the least validation loss plus that λ's penalty).
  std::string selection = "val_loss";
  bool path_weights = false;  // keep the weights of every path point (path_weights.npy)
  // The memory a run may use, GiB; 0: what the machine has available (MemAvailable, or the
  // cgroup's limit when lower). A run whose estimate exceeds it is refused before it starts.
  double memory_limit_gib = 0;
  std::string device = "cpu";    // cpu | cuda
  std::string table = "device";  // where the SAGA table lives: device | host
  int threads = 0;               // torch intra-op threads; 0: torch's default

  bool operator==(const SagaSolver&) const = default;
};

// Whether a run keeps the model of every path point: asked for (path_weights), or needed by the
// one_se rule, which compares every point once the path is done. The solvers and the memory
// estimate both follow it.
inline bool keeps_path_models(const SagaSolver& solver) {
  return solver.path_weights || solver.selection == "one_se";
}

struct SagaLogging {
  std::string folder = "runs";
  std::string progress = "auto";  // auto | always | never

  bool operator==(const SagaLogging&) const = default;
};

struct SagaRecipe {
  SagaData data;
  SagaSolver saga;
  SagaLogging logging;
  std::string name;    // the recipe file's stem
  std::string source;  // the recipe file's path

  bool operator==(const SagaRecipe&) const = default;
};

// True when the TOML file at `path` has a top-level [saga] table (it is then a SAGA recipe).
// Throws ConfigError when the file cannot be read or is not TOML.
bool is_saga_recipe(const std::string& path);

// Reads, overrides ("section.key=value", as for training recipes) and checks a SAGA recipe.
// Throws ConfigError with a one-line message naming the file, line and key.
SagaRecipe load_saga_recipe(const std::string& path,
                            const std::vector<std::string>& overrides = {});

// Every key written out: load_saga_recipe of this text gives the same recipe.
std::string saga_recipe_to_toml(const SagaRecipe& recipe);

// "section.key" of every key.
std::vector<std::string> saga_recipe_keys();

}  // namespace ffcv::saga
