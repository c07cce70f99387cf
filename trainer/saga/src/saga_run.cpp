#include "ffcv/saga/saga_run.hpp"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>

#include "ffcv/format/npy_array.hpp"
#include "ffcv/saga/row_source.hpp"
#include "ffcv/saga/saga_memory.hpp"
#include "ffcv/saga/saga_path.hpp"
#include "ffcv/saga/saga_step.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/available_memory.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::saga {
namespace {

at::Device solver_device(const SagaSolver& solver) {
  if (solver.device == "cuda") {
    if (!torch::cuda::is_available()) {
      throw ConfigError(
          "saga.device = \"cuda\" but no CUDA device is visible; use "
          "--set saga.device=cpu");
    }
    return at::Device(at::kCUDA, 0);
  }
  return at::kCPU;
}

void write_tensor(const std::string& path, const at::Tensor& tensor) {
  const at::Tensor host = tensor.to(at::kCPU).contiguous();
  NpyArray array;
  array.dtype = DType::parse(host.scalar_type() == at::kDouble ? "<f8" : "<f4");
  const at::Tensor typed = host.scalar_type() == at::kDouble ? host : host.to(at::kFloat);
  for (const std::int64_t size : typed.sizes())
    array.shape.push_back(static_cast<std::uint64_t>(size));
  const auto* bytes = static_cast<const std::uint8_t*>(typed.data_ptr());
  array.data.assign(bytes, bytes + typed.numel() * typed.element_size());
  write_npy(path, array);
}

// Writes a float32 tensor as .npy straight from its memory (path weights may be most of the
// memory there is: no second copy).
void write_float_tensor(const std::string& path, const at::Tensor& tensor) {
  const at::Tensor host = tensor.to(at::kCPU).to(at::kFloat).contiguous();
  std::string shape;
  for (const std::int64_t size : host.sizes()) shape += std::to_string(size) + ", ";
  if (host.dim() > 1) shape.resize(shape.size() - 2);  // (3,) keeps its comma, (3, 4) has none
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Magic, version 1.0, the header length, then the header padded with spaces to a multiple of
  // 64 bytes and ended by a newline.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string prefix = "\x93NUMPY";
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);
  prefix += header;
  AtomicFile file(path);
  file.write_at(0, prefix.data(), prefix.size());
  file.write_at(prefix.size(), host.data_ptr(), static_cast<std::uint64_t>(host.numel()) * 4);
  file.commit();
}

std::string csv_number(double value) { return std::isnan(value) ? "" : json_float(value); }

void append_points(std::string& csv, const std::vector<PathPoint>& points, const char* phase) {
  for (const PathPoint& p : points) {
    csv += std::to_string(p.target) + "," + csv_number(p.lambda) + "," + csv_number(p.lr) + "," +
           csv_number(p.train_loss) + "," + csv_number(p.val_loss) + "," + std::to_string(p.nnz) +
           "," + std::to_string(p.epochs) + "," + json_number(p.seconds, 4) + "," +
           (p.converged ? "true" : "false") + "," + phase + "," + csv_number(p.val_se) + "," +
           csv_number(p.penalty) + "\n";
  }
}

double mean_of(const at::Tensor& values) { return values.to(at::kDouble).mean().item<double>(); }

// Checks the estimate of saga_memory.hpp for these sizes.
void check_memory(const SagaRecipe& recipe, const RowSource& train, std::uint64_t outputs,
                  std::uint64_t table_rows) {
  MemorySizes sizes;
  sizes.features = train.features();
  sizes.outputs = outputs;
  sizes.table_rows = table_rows;
  sizes.stored_row_bytes =
      recipe.data.mask_bits > 0 ? (recipe.data.mask_bits + 7) / 8 : train.features() * 4;
  check_saga_memory(estimate_saga_memory(recipe, sizes), recipe.saga, available_memory_bytes());
}

// The selected λ in words: the one λ, or the range of the per-target ones.
std::string selection_text(const at::Tensor& lambda, const std::string& rule) {
  const at::Tensor values = lambda.to(at::kDouble);
  const double low = values.min().item<double>(), high = values.max().item<double>();
  char text[200];
  if (low == high) {
    std::snprintf(text, sizeof text, "selected λ %.4g (%s)", low, rule.c_str());
  } else {
    std::snprintf(text, sizeof text,
                  "selected λ per target from %.4g to %.4g, median %.4g (%s; lambda.npy)", low,
                  high, values.median().item<double>(), rule.c_str());
  }
  return text;
}

using Say = std::function<void(const std::string&)>;

// The training rows: data.num_train, or (0) every row the validation rows leave; checked
// against the `total` rows of the dataset.
std::uint64_t training_rows(const SagaData& data, std::uint64_t total) {
  const std::string where = data.loader == "mmap" ? data.features_npy : data.train;
  if (data.num_val >= total) {
    throw ConfigError(where + " has " + std::to_string(total) + " rows: data.num_val = " +
                      std::to_string(data.num_val) + " leaves none to train on");
  }
  const std::uint64_t train_rows = data.num_train == 0 ? total - data.num_val : data.num_train;
  if (train_rows + data.num_val > total) {
    throw ConfigError(where + " has " + std::to_string(total) +
                      " rows, fewer than data.num_train"
                      " + data.num_val = " +
                      std::to_string(train_rows + data.num_val));
  }
  return train_rows;
}

// What the summary knows before the first pass.
SagaRunSummary starting_summary(const SagaRecipe& recipe, bool lasso, std::uint64_t train_rows,
                                std::uint64_t features) {
  SagaRunSummary summary;
  summary.objective = recipe.saga.objective;
  summary.family = lasso ? "gaussian" : recipe.saga.family;
  summary.loader = recipe.data.loader;
  summary.device = recipe.saga.device;
  summary.train_rows = train_rows;
  summary.val_rows = recipe.data.num_val;
  summary.features = features;
  return summary;
}

// The run's first console line.
std::string run_text(const SagaRunSummary& summary) {
  return "SAGA " + summary.objective + " (" + summary.family + ") on " +
         std::to_string(summary.train_rows) + " training and " + std::to_string(summary.val_rows) +
         " validation rows of " + std::to_string(summary.features) + " features; loader " +
         summary.loader + ", device " + summary.device;
}

// The console line after the first passes.
std::string stats_text(const RowStats& stats, double stream_seconds_per_epoch) {
  char line[200];
  std::snprintf(line, sizeof line,
                "%llu outputs; largest λ_max %.6g; streaming the training features once takes "
                "%.3f s",
                static_cast<unsigned long long>(stats.outputs),
                stats.gradient_bound.max().item<double>(), stream_seconds_per_epoch);
  return line;
}

// Seconds per pass over the training rows (an epoch that ended early counts for its share).
double seconds_per_epoch(const PathResult& path, std::uint64_t train_rows) {
  return path.rows_stepped == 0 ? 0.0
                                : path.train_seconds * static_cast<double>(train_rows) /
                                      static_cast<double>(path.rows_stepped);
}

// The path of saga.objective: elastic_net's, or lasso_path's from each column's λ_max.
PathResult solve_path(const SagaSolver& solver, const SolveInputs& inputs) {
  if (solver.objective != "lasso_path") return solve_elastic_net(solver, inputs);
  const double decay = std::pow(solver.epsilon, 1.0 / static_cast<double>(solver.num_lambdas));
  return solve_lasso_path(solver, inputs, inputs.stats->gradient_bound, decay, solver.num_lambdas);
}

// Refits the lasso path on the training and validation rows (`rows` in all) at each column's
// selected λ: λ = 0, then that λ. The result has the path's points and kept weights, then the
// refit's points; `refit_stats` receives the standardization of those rows, `csv` the refit's
// points, `summary` the time to the refit model and the refit's loader wait.
PathResult refit_lasso(const SagaRecipe& recipe, const SolveInputs& inputs, PathResult path,
                       std::uint64_t rows, const Stopwatch& start, const Say& say,
                       RowStats& refit_stats, std::string& csv, SagaRunSummary& summary) {
  say("refit on training and validation rows at each column's selected λ");
  std::unique_ptr<RowSource> both =
      open_row_source(recipe, {0, rows}, recipe.data.order, inputs.device, false);
  refit_stats = measure_rows(*both, inputs.family, 0, inputs.stop);
  SolveInputs refit_inputs = inputs;
  refit_inputs.train = both.get();
  refit_inputs.val = nullptr;
  refit_inputs.stats = &refit_stats;
  PathResult refit = solve_lasso_path(recipe.saga, refit_inputs, path.lambda, 1.0, 1);
  append_points(csv, refit.points, "refit");
  refit.val_loss = path.val_loss;
  refit.path_weights = path.path_weights;  // the path's points (the refit's are not kept)
  refit.path_bias = path.path_bias;
  refit.points.insert(refit.points.begin(), path.points.begin(), path.points.end());
  refit.epochs += path.epochs;
  refit.unfinished += path.unfinished;
  summary.time_to_selected_seconds = start.seconds() - summary.stream_seconds_per_epoch;
  summary.loader_wait_seconds += both->wait_seconds();
  return refit;
}

// The selected model's figures in the summary.
void record_selection(SagaRunSummary& summary, const PathResult& result, const std::string& rule,
                      bool has_val) {
  summary.epochs = result.epochs;
  summary.path_points = result.points.size();
  summary.unfinished = result.unfinished;
  for (std::int64_t k = 0; k < result.lambda.size(0); ++k) {
    summary.selected_lambdas.push_back(result.lambda[k].item<double>());
  }
  summary.selected_lambda = result.lambda.min().item<double>() == result.lambda.max().item<double>()
                                ? summary.selected_lambdas.front()
                                : std::nan("");
  summary.selection = rule;
  summary.selection_text = selection_text(result.lambda, rule);
  summary.val_loss = has_val ? mean_of(result.val_loss) : std::nan("");
  summary.nnz = static_cast<std::uint64_t>(nonzero_weights(result.weight));
}

// The run folder's outputs but summary.json: the path's CSV, the selected model and the
// standardization its weights are in, and the path's weights when kept.
void write_outputs(const std::string& dir, const std::string& csv, const PathResult& result,
                   const RowStats& stats) {
  write_file_atomically(dir + "/path.csv", csv);
  write_tensor(dir + "/weights.npy", result.weight);
  write_tensor(dir + "/bias.npy", result.bias);
  write_tensor(dir + "/lambda.npy", result.lambda);
  write_tensor(dir + "/feature_mean.npy", stats.mean);
  write_tensor(dir + "/feature_std.npy", stats.std);
  if (result.path_weights.defined()) {
    write_float_tensor(dir + "/path_weights.npy", result.path_weights);
    write_float_tensor(dir + "/path_bias.npy", result.path_bias);
  }
}

}  // namespace

SagaRunSummary run_saga(const SagaRecipe& given, const SagaRunOptions& options) {
  const Stopwatch start;
  std::string packing_note;
  const SagaRecipe recipe = resolve_packed_features(given, &packing_note);
  const SagaData& data = recipe.data;
  const SagaSolver& solver = recipe.saga;
  const at::Device device = solver_device(solver);
  if (solver.threads > 0) at::set_num_threads(solver.threads);
  const Say say = [&](const std::string& line) {
    if (options.quiet) return;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };

  // The row subsets.
  const std::uint64_t train_rows = training_rows(data, dataset_rows(recipe));
  const bool lasso = solver.objective == "lasso_path";
  const Family family =
      !lasso && solver.family == "multinomial" ? Family::kMultinomial : Family::kGaussian;
  const bool labels = family == Family::kMultinomial;
  std::unique_ptr<RowSource> train =
      open_row_source(recipe, {0, train_rows}, data.order, device, labels);
  std::unique_ptr<RowSource> val;
  if (data.num_val > 0) {
    val = open_row_source(recipe, {train_rows, data.num_val}, "sequential", device, labels);
  }
  // Before the first pass: K is known for regression targets; for class labels at least 2.
  const std::uint64_t table_rows = train_rows + (lasso && solver.refit ? data.num_val : 0);
  check_memory(recipe, *train, labels ? 2 : train->targets(), table_rows);
  write_file_atomically(options.run_dir + "/recipe.toml", saga_recipe_to_toml(recipe));
  if (!packing_note.empty()) say(packing_note);

  SagaRunSummary summary = starting_summary(recipe, lasso, train_rows, train->features());
  say(run_text(summary));

  // One pass for standardization and λ_max, then one that only streams the features: the
  // bound a solver epoch is compared with (the first pass has warmed what caches there are, as
  // it has for the solver's epochs).
  const Stopwatch stats_start;
  const RowStats stats = measure_rows(*train, family, 0, options.stop);
  const double stats_seconds = stats_start.seconds();
  summary.outputs = stats.outputs;
  if (labels) check_memory(recipe, *train, stats.outputs, table_rows);
  summary.stream_seconds_per_epoch = stream_seconds(*train, 0, options.stop);
  say(stats_text(stats, summary.stream_seconds_per_epoch));

  SolveInputs inputs;
  inputs.train = train.get();
  inputs.val = val.get();
  inputs.stats = &stats;
  inputs.family = family;
  inputs.device = device;
  inputs.stop = options.stop;
  if (!options.quiet) inputs.progress = say;

  PathResult result = solve_path(solver, inputs);
  summary.seconds_per_epoch = seconds_per_epoch(result, train_rows);
  std::string csv =
      "target,lambda,lr,train_loss,val_loss,nnz,epochs,seconds,converged,phase,val_se,penalty\n";
  append_points(csv, result.points, "path");
  summary.time_to_selected_seconds = stats_seconds + result.selected_seconds;
  const RowStats* final_stats = &stats;
  RowStats refit_stats;
  if (lasso && solver.refit && val) {
    result = refit_lasso(recipe, inputs, std::move(result), train_rows + data.num_val, start, say,
                         refit_stats, csv, summary);
    final_stats = &refit_stats;
  }
  record_selection(summary, result, solver.selection, val != nullptr);
  summary.loader_wait_seconds += train->wait_seconds() + (val ? val->wait_seconds() : 0.0);

  write_outputs(options.run_dir, csv, result, *final_stats);
  summary.seconds = start.seconds();
  write_file_atomically(options.run_dir + "/summary.json", summary_json(summary));
  return summary;
}

std::string summary_json(const SagaRunSummary& s) {
  std::string out = "{\n";
  const auto text = [&](const char* key, const std::string& value) {
    out += std::string("  ") + json_quote(key) + ": " + json_quote(value) + ",\n";
  };
  const auto count = [&](const char* key, std::uint64_t value) {
    out += std::string("  ") + json_quote(key) + ": " + std::to_string(value) + ",\n";
  };
  const auto number = [&](const char* key, double value) {
    out += std::string("  ") + json_quote(key) + ": " +
           (std::isfinite(value) ? json_float(value) : "null") + ",\n";
  };
  text("objective", s.objective);
  text("family", s.family);
  text("loader", s.loader);
  text("device", s.device);
  count("n_train", s.train_rows);
  count("n_val", s.val_rows);
  count("features", s.features);
  count("targets", s.outputs);
  count("epochs", s.epochs);
  count("path_points", s.path_points);
  count("unfinished", s.unfinished);
  number("seconds", s.seconds);
  number("stream_seconds_per_epoch", s.stream_seconds_per_epoch);
  number("seconds_per_epoch", s.seconds_per_epoch);
  number("epoch_over_stream", s.stream_seconds_per_epoch > 0
                                  ? s.seconds_per_epoch / s.stream_seconds_per_epoch
                                  : std::nan(""));
  number("time_to_selected_seconds", s.time_to_selected_seconds);
  number("loader_wait_seconds", s.loader_wait_seconds);
  text("selection", s.selection);
  number("selected_lambda", s.selected_lambda);
  out += "  \"selected_lambdas\": [";
  for (std::size_t i = 0; i < s.selected_lambdas.size(); ++i) {
    out +=
        (i ? ", " : "") + (std::isfinite(s.selected_lambdas[i]) ? json_float(s.selected_lambdas[i])
                                                                : std::string("null"));
  }
  out += "],\n";
  number("val_loss", s.val_loss);
  out += "  \"nnz\": " + std::to_string(s.nnz) + "\n}\n";
  return out;
}

}  // namespace ffcv::saga
