// The SAGA solver library (trainer/saga) on small problems written as .beton by `ffcv write npy`:
// the λ_max bound, warm against cold starts, the same path whatever the loader's threads, the
// same path from our loader and from the memory-mapped baseline, packed and unpacked masks, the
// lasso path with validation and refit, and the recipe's errors. Agreement with scikit-learn
// and the KKT conditions are checked by check_saga_reference.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "ffcv/format/npy_array.hpp"
#include "ffcv/saga/saga_path.hpp"
#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_run.hpp"
#include "ffcv/util/errors.hpp"
#include "saga_test_support.hpp"

namespace ffcv::saga {
using namespace test_saga;

TEST_CASE("λ at or above λ_max gives weights that are exactly 0, and 0.9 λ_max does not",
          "[saga]") {
  // The solver's own stopping rule (look-behind, tol 1e-7): at λ_max one weight sits on the
  // boundary of the zero region, where the iterates approach 0 only slowly; the KKT bound says
  // the optimum is 0 there, and so must the weights be.
  const std::vector<std::string> path = {"saga.num_lambdas=2", "saga.epsilon=0.9",
                                         "saga.do_zero=false"};
  for (const bool labels : {false, true}) {
    INFO((labels ? "multinomial" : "gaussian"));
    test::TempDir dir;
    Problem problem;
    problem.labels = labels;
    write_problem(problem, dir);
    std::vector<std::string> overrides = path;
    if (labels) overrides.push_back("saga.family=multinomial");
    const std::string out = run_into(dir, "run", recipe_for(dir, overrides));
    const auto rows = csv_rows(out + "/path.csv");
    REQUIRE(rows.size() == 3);
    CHECK(rows[0][0] == "target");
    CHECK(rows[1][5] == "0");            // nnz at λ_max
    CHECK(std::stoull(rows[2][5]) > 0);  // and below it
    const double lambda_max = std::stod(rows[1][1]);
    CHECK(std::stod(rows[2][1]) == Approx(0.9 * lambda_max).epsilon(1e-9));
    const std::vector<float> weights = floats_of(out + "/path_weights.npy");
    const std::size_t per_point = weights.size() / 2;
    CHECK(largest_magnitude({weights.begin(), weights.begin() + per_point}) == 0.0);
    CHECK(largest_magnitude({weights.begin() + per_point, weights.end()}) > 0.0);

    // Above λ_max too; the bias is then the optimum of a model without weights.
    std::vector<std::string> above = {"saga.lambdas=[" + std::to_string(2 * lambda_max) + "]",
                                      "saga.do_zero=false"};
    if (labels) above.push_back("saga.family=multinomial");
    const std::string high = run_into(dir, "above", recipe_for(dir, above));
    CHECK(largest_magnitude(floats_of(high + "/weights.npy")) == 0.0);
    if (!labels) {
      // Gaussian: b = the training targets' mean (rows 0..399), computed here in double.
      const std::vector<float> targets = floats_of(dir.file("y.npy"));
      const std::vector<float> bias = floats_of(high + "/bias.npy");
      for (std::size_t k = 0; k < bias.size(); ++k) {
        double mean = 0;
        for (std::size_t i = 0; i < 400; ++i) mean += targets[i * bias.size() + k];
        CHECK(bias[k] == Approx(mean / 400).epsilon(1e-6).margin(1e-6));
      }
    }
  }
  // The lasso path: every target's λ_max point, and only that one, has no nonzero weight.
  test::TempDir dir;
  Problem problem;
  problem.targets = 3;
  write_problem(problem, dir);
  const std::string out =
      run_into(dir, "lasso",
               recipe_for(dir, {"saga.objective=lasso_path", "saga.num_lambdas=4",
                                "saga.epsilon=0.1", "saga.refit=false", "saga.min_lambdas=5"}));
  const auto rows = csv_rows(out + "/path.csv");
  const std::vector<float> weights = floats_of(out + "/path_weights.npy");
  REQUIRE(weights.size() == (rows.size() - 1) * 12);
  std::vector<double> largest_lambda(3, 0.0);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto k = static_cast<std::size_t>(std::stoi(rows[i][0]));
    largest_lambda[k] = std::max(largest_lambda[k], std::stod(rows[i][1]));
  }
  for (std::size_t i = 1; i < rows.size(); ++i) {
    INFO("path.csv row " << i << ": target " << rows[i][0] << ", λ " << rows[i][1]);
    const auto k = static_cast<std::size_t>(std::stoi(rows[i][0]));
    const std::vector<float> row(weights.begin() + static_cast<std::ptrdiff_t>((i - 1) * 12),
                                 weights.begin() + static_cast<std::ptrdiff_t>(i * 12));
    if (std::stod(rows[i][1]) == largest_lambda[k]) {
      CHECK(largest_magnitude(row) == 0.0);
    } else {
      CHECK(largest_magnitude(row) > 0.0);
    }
  }
}

TEST_CASE("a warm-started path and a cold start at the same λ agree", "[saga]") {
  test::TempDir dir;
  write_problem({}, dir);
  const std::string warm =
      run_into(dir, "warm", recipe_for(dir, {"saga.lambdas=[0.5, 0.2, 0.05]", "saga.alpha=0.7"}));
  const std::string cold =
      run_into(dir, "cold", recipe_for(dir, {"saga.lambdas=[0.05]", "saga.alpha=0.7"}));
  const std::vector<float> a = floats_of(warm + "/path_weights.npy");
  const std::vector<float> b = floats_of(cold + "/path_weights.npy");
  const std::vector<float> last(a.end() - static_cast<std::ptrdiff_t>(b.size()), a.end());
  // Both converge to the one optimum (the objective is strongly convex for α < 1).
  CHECK(largest_difference(last, b) <= 2e-3 * largest_magnitude(b));
  CHECK(largest_magnitude(b) > 0.1);
}

TEST_CASE("the same seed gives the same path for any number of loader threads", "[saga]") {
  test::TempDir dir;
  write_problem({}, dir);
  const std::vector<std::string> base = {"saga.lambdas=[0.3, 0.1]", "saga.max_epochs=30"};
  std::vector<std::string> one = base, three = base;
  one.push_back("data.num_workers=1");
  three.push_back("data.num_workers=3");
  const std::string a = run_into(dir, "one", recipe_for(dir, one));
  const std::string b = run_into(dir, "three", recipe_for(dir, three));
  CHECK(test::read_file(a + "/path_weights.npy") == test::read_file(b + "/path_weights.npy"));
  CHECK(test::read_file(a + "/bias.npy") == test::read_file(b + "/bias.npy"));
  const auto rows_a = csv_rows(a + "/path.csv"), rows_b = csv_rows(b + "/path.csv");
  REQUIRE(rows_a.size() == rows_b.size());
  for (std::size_t i = 0; i < rows_a.size(); ++i) {
    for (std::size_t column = 0; column < 7; ++column) {  // all but the times
      CHECK(rows_a[i][column] == rows_b[i][column]);
    }
  }
  // Another seed visits the rows in another order.
  std::vector<std::string> other = one;
  other.push_back("data.seed=5");
  const std::string c = run_into(dir, "other", recipe_for(dir, other));
  CHECK(test::read_file(a + "/path_weights.npy") != test::read_file(c + "/path_weights.npy"));
}

TEST_CASE("our loader and the memory-mapped baseline feed the same batches", "[saga]") {
  test::TempDir dir;
  Problem problem;
  problem.masks = true;
  problem.features = 21;  // not a multiple of 8
  write_problem(problem, dir);
  const std::vector<std::string> base = {"saga.lambdas=[0.3, 0.1]", "saga.max_epochs=20",
                                         "data.mask_bits=21"};
  const std::string ffcv_run = run_into(dir, "ffcv", recipe_for(dir, base));
  std::vector<std::string> mmap = base;
  mmap.push_back("data.loader=mmap");
  const std::string mmap_run = run_into(dir, "mmap", recipe_for(dir, mmap));
  std::vector<std::string> packed = base;
  packed.push_back("data.train=" + dir.file("packed.beton"));
  const std::string packed_run = run_into(dir, "packed", recipe_for(dir, packed));
  const auto weights = test::read_file(ffcv_run + "/path_weights.npy");
  CHECK(weights == test::read_file(mmap_run + "/path_weights.npy"));
  CHECK(weights == test::read_file(packed_run + "/path_weights.npy"));
  CHECK(test::read_file(ffcv_run + "/feature_mean.npy") ==
        test::read_file(packed_run + "/feature_mean.npy"));
  const std::string summary = test::text_of(mmap_run + "/summary.json");
  CHECK_THAT(summary, Catch::Contains("\"loader\": \"mmap\""));
  CHECK_THAT(summary, Catch::Contains("\"features\": 21"));
}

TEST_CASE("the lasso path gives each target its own λ, selected on validation rows", "[saga]") {
  test::TempDir dir;
  Problem problem;
  problem.targets = 3;
  write_problem(problem, dir);
  const std::string out =
      run_into(dir, "lasso",
               recipe_for(dir, {"saga.objective=lasso_path", "saga.num_lambdas=8",
                                "saga.epsilon=0.01", "saga.early_stop_eps=1e-8",
                                "saga.early_stop_freq=2", "saga.min_lambdas=3", "saga.lr=0.02"}));
  const auto rows = csv_rows(out + "/path.csv");
  std::vector<int> points(3, 0), refits(3, 0);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const int target = std::stoi(rows[i][0]);
    REQUIRE(target >= 0);
    REQUIRE(target < 3);
    (rows[i][9] == "refit" ? refits : points)[target]++;
  }
  for (int t = 0; t < 3; ++t) {
    INFO("target " << t);
    CHECK(points[t] >= 3);  // λ = 0, λ_max, ... until validation stops it
    CHECK(refits[t] == 2);  // λ = 0, then the selected λ
  }
  const NpyArray lambdas = read_npy(out + "/lambda.npy");
  REQUIRE(lambdas.shape == std::vector<std::uint64_t>{3});
  const NpyArray weights = read_npy(out + "/weights.npy");
  CHECK(weights.shape == std::vector<std::uint64_t>{12, 3});
  const std::string summary = test::text_of(out + "/summary.json");
  CHECK_THAT(summary, Catch::Contains("\"objective\": \"lasso_path\""));
  CHECK_THAT(summary, Catch::Contains("\"unfinished\": 0"));
}

TEST_CASE("the lasso path reports each target's λ and keeps its path's weights when asked",
          "[saga]") {
  test::TempDir dir;
  Problem problem;
  problem.targets = 3;
  write_problem(problem, dir);
  const std::vector<std::string> lasso = {"saga.objective=lasso_path", "saga.num_lambdas=8",
                                          "saga.epsilon=0.01", "saga.min_lambdas=3",
                                          "saga.refit=false"};
  const std::string out = run_into(dir, "lasso", recipe_for(dir, lasso));
  const auto rows = csv_rows(out + "/path.csv");
  const NpyArray path_weights = read_npy(out + "/path_weights.npy");
  REQUIRE(path_weights.shape == std::vector<std::uint64_t>{rows.size() - 1, 12});
  CHECK(read_npy(out + "/path_bias.npy").shape == std::vector<std::uint64_t>{rows.size() - 1});
  const std::vector<float> path = floats_of(out + "/path_weights.npy");
  const std::vector<float> weights = floats_of(out + "/weights.npy");  // [12, 3]
  const std::vector<double> lambdas = doubles_of(out + "/lambda.npy");
  REQUIRE(lambdas.size() == 3);

  // summary.json lists every target's λ as lambda.npy holds it; no single λ stands for them.
  const std::string summary = test::text_of(out + "/summary.json");
  const std::vector<double> listed = json_list(summary, "selected_lambdas");
  REQUIRE(listed.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) CHECK(listed[k] == lambdas[k]);
  CHECK(lambdas[0] != lambdas[1]);
  CHECK_THAT(summary, Catch::Contains("\"selected_lambda\": null"));
  CHECK_THAT(summary, Catch::Contains("\"selection\": \"val_loss\""));

  // Each target's selected model is the path point of least validation loss, stored as it was.
  for (std::size_t k = 0; k < 3; ++k) {
    INFO("target " << k);
    std::size_t best = 0;
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t i = 1; i < rows.size(); ++i) {
      if (std::stoul(rows[i][0]) != k) continue;
      if (std::stod(rows[i][4]) < least) least = std::stod(rows[i][4]), best = i;
    }
    REQUIRE(best > 0);
    CHECK(std::stod(rows[best][1]) == Approx(lambdas[k]).epsilon(1e-12));
    for (std::size_t j = 0; j < 12; ++j) CHECK(weights[j * 3 + k] == path[(best - 1) * 12 + j]);
  }

  // Not asked for: not written.
  const std::string bare =
      run_into(dir, "bare", recipe_for(dir, with(lasso, "saga.path_weights=false")));
  CHECK_FALSE(std::filesystem::exists(bare + "/path_weights.npy"));
  CHECK(test::read_file(bare + "/weights.npy") == test::read_file(out + "/weights.npy"));
}

TEST_CASE("each selection rule picks the path point it names", "[saga]") {
  // Few true features among many (3 of 60 per target), noisy targets: λ = 0 fits the noise.
  test::TempDir dir;
  Problem problem;
  problem.features = 60;
  problem.targets = 1;
  problem.spacing = 20;
  problem.noise = 2.0;
  write_problem(problem, dir);
  const std::vector<std::string> base = {"saga.num_lambdas=12", "saga.epsilon=1e-3", "saga.alpha=1",
                                         "saga.lr=0.05"};
  std::map<std::string, double> chosen;
  for (const std::string rule : {"val_loss", "one_se", "penalized_val_loss"}) {
    INFO("saga.selection = " << rule);
    const std::string out =
        run_into(dir, rule, recipe_for(dir, with(base, "saga.selection=" + rule)));
    const auto rows = csv_rows(out + "/path.csv");
    REQUIRE(rows.size() == 14);  // 12 λ and λ = 0
    REQUIRE(rows[0][10] == "val_se");
    REQUIRE(rows[0][11] == "penalty");
    // The rule, computed here from path.csv: the least score, ties to the larger λ (earlier).
    std::size_t best = 1;
    const auto score = [&](std::size_t i) {
      const double loss = std::stod(rows[i][4]);
      return rule == "penalized_val_loss" ? loss + std::stod(rows[i][11]) : loss;
    };
    for (std::size_t i = 2; i < rows.size(); ++i) {
      if (score(i) < score(best)) best = i;
    }
    if (rule == "one_se") {
      const double limit = std::stod(rows[best][4]) + std::stod(rows[best][10]);
      for (std::size_t i = 1; i < best; ++i) {
        if (std::stod(rows[i][4]) <= limit) {
          best = i;
          break;
        }
      }
    }
    const std::vector<double> lambda = doubles_of(out + "/lambda.npy");
    CHECK(lambda[0] == Approx(std::stod(rows[best][1])).epsilon(1e-12));
    const std::vector<float> path = floats_of(out + "/path_weights.npy");
    const std::vector<float> weights = floats_of(out + "/weights.npy");
    CHECK(std::equal(weights.begin(), weights.end(),
                     path.begin() + static_cast<std::ptrdiff_t>((best - 1) * weights.size())));
    chosen[rule] = lambda[0];
  }
  // Least validation loss is a sparse model here, not the last λ; one standard error allows a
  // sparser one still; adding the penalty leans to the smallest λ.
  CHECK(chosen["val_loss"] > 0);
  CHECK(chosen["one_se"] >= chosen["val_loss"]);
  CHECK(chosen["penalized_val_loss"] <= chosen["val_loss"]);
}

TEST_CASE("selection ties go to the larger λ and one_se to the largest λ within one SE", "[saga]") {
  // A lasso column's path order: λ = 0 first, then λ_max falling.
  const std::vector<Candidate> path = {{0.0, 1.00, 0.05, 0.50},
                                       {5.0, 2.00, 0.05, 1.00},
                                       {2.0, 1.02, 0.05, 0.61},
                                       {1.0, 0.99, 0.05, 0.52}};
  CHECK(select_point(path, "val_loss") == 3);
  CHECK(select_point(path, "one_se") == 2);  // 1.02 <= 0.99 + 0.05, the largest such λ
  CHECK(select_point(path, "penalized_val_loss") == 0);
  std::vector<Candidate> tie = path;
  tie[2].val_loss = 0.99;
  CHECK(select_point(tie, "val_loss") == 2);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(select_point({{3.0, nan, nan, nan}, {1.0, nan, nan, nan}}, "val_loss") == 1);
  CHECK(standard_error(6.0, 14.0, 3.0) == Approx(std::sqrt(1.0 / 3.0)));  // 1, 2, 3
}

TEST_CASE("every SAGA recipe in recipes/saga loads and writes back the same", "[saga]") {
  const std::filesystem::path root = std::filesystem::path(FFCV_SOURCE_DIR) / "recipes/saga";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().extension() != ".toml") continue;
    INFO(entry.path());
    ++count;
    CHECK(is_saga_recipe(entry.path().string()));
    const SagaRecipe recipe = load_saga_recipe(entry.path().string());
    test::TempDir dir;
    std::ofstream(dir.file("again.toml")) << saga_recipe_to_toml(recipe);
    SagaRecipe again = load_saga_recipe(dir.file("again.toml"));
    again.name = recipe.name;
    again.source = recipe.source;
    CHECK(again == recipe);
  }
  CHECK(count >= 3);
  CHECK_FALSE(is_saga_recipe(std::string(FFCV_SOURCE_DIR) + "/recipes/fashion_mnist.toml"));
}

TEST_CASE("every loader setting is a key of a SAGA recipe's [data], old spellings too",
          "[saga][settings]") {
  const std::vector<std::string> keys = saga_recipe_keys();
  for (const std::string& name : loader_setting_names()) {
    INFO(name);
    CHECK(std::count(keys.begin(), keys.end(), "data." + name) == 1);
  }
  const std::string recipe = std::string(FFCV_SOURCE_DIR) + "/recipes/saga/datamodels_paper.toml";
  const SagaRecipe defaults = load_saga_recipe(recipe);
  CHECK(defaults.data.order == "random");
  const SagaRecipe set = load_saga_recipe(
      recipe, {"data.workers=3", "data.window_pages=7", "data.storage_latency_ms=2"});
  CHECK(set.data.num_workers == 3);
  CHECK(set.data.window_pages == 7);
  CHECK(set.data.storage_latency_ms == 2);
  CHECK(set.data.batch_size == defaults.data.batch_size);
}

TEST_CASE("SAGA recipes and data that do not fit are refused with one clear line", "[saga]") {
  test::TempDir dir;
  write_problem({}, dir);
  CHECK_THROWS_WITH(recipe_for(dir, {"saga.lamdbas=[1]"}),
                    Catch::Contains("did you mean 'saga.lambdas'"));
  CHECK_THROWS_WITH(recipe_for(dir, {"data.loader=mmap", "data.features_npy="}),
                    Catch::Contains("data.features_npy"));
  CHECK_THROWS_WITH(recipe_for(dir, {"saga.objective=lasso_path", "saga.family=multinomial"}),
                    Catch::Contains("must be \"gaussian\""));
  CHECK_THROWS_WITH(recipe_for(dir, {"data.loader=mmap", "data.order=quasi_random"}),
                    Catch::Contains("quasi"));
  CHECK_THROWS_WITH(run_into(dir, "a", recipe_for(dir, {"data.num_val=500"})),
                    Catch::Contains("leaves none to train on"));
  CHECK_THROWS_WITH(run_into(dir, "b", recipe_for(dir, {"data.num_train=450"})),
                    Catch::Contains("fewer than data.num_train"));
  CHECK_THROWS_WITH(run_into(dir, "c", recipe_for(dir, {"data.mask_bits=100"})),
                    Catch::Contains("data.mask_bits = 100"));
  CHECK_THROWS_WITH(run_into(dir, "d", recipe_for(dir, {"saga.family=multinomial"})),
                    Catch::Contains("integer class label"));
  CHECK_THROWS_WITH(run_into(dir, "e", recipe_for(dir, {"data.features=nope"})),
                    Catch::Contains("nope"));
}

}  // namespace ffcv::saga
