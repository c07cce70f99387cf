// The SAGA solver library (trainer/saga) on small problems written as .beton by `ffcv write npy`:
// the λ_max bound, warm against cold starts, the same path whatever the loader's threads, the
// same path from our loader and from the memory-mapped baseline, packed and unpacked masks, the
// lasso path with validation and refit, and the recipe's errors. Agreement with scikit-learn
// and the KKT conditions are checked by check_saga_reference.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "ffcv/errors.hpp"
#include "ffcv/npy_array.hpp"
#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_run.hpp"
#include "test_support.hpp"

namespace ffcv::saga {
namespace {

// y = X w* + noise with 3 nonzero weights per target; X standard normal (float32) or, with
// `masks`, Bernoulli(1/2) booleans.
struct Problem {
  std::uint64_t rows = 500, features = 12, targets = 2;
  bool masks = false;
  bool labels = false;  // class labels 0..2 from the first three weight columns (argmax)
};

void write_problem(const Problem& problem, const test::TempDir& dir) {
  std::mt19937_64 random(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::bernoulli_distribution coin(0.5);
  const std::uint64_t n = problem.rows, d = problem.features, k = problem.targets;
  std::vector<double> x(n * d), truth(d * 3, 0.0);
  for (std::uint64_t c = 0; c < 3; ++c) {
    for (std::uint64_t j = c; j < d; j += 4) truth[j * 3 + c] = (j % 2 ? 1.5 : -2.0) / (c + 1);
  }
  NpyArray features, targets;
  features.dtype = DType::parse(problem.masks ? "bool" : "<f4");
  features.shape = {n, d};
  for (std::uint64_t i = 0; i < n * d; ++i) {
    x[i] = problem.masks ? (coin(random) ? 1.0 : 0.0) : normal(random);
    if (problem.masks) {
      features.data.push_back(x[i] != 0);
    } else {
      const float value = static_cast<float>(x[i]);
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
      features.data.insert(features.data.end(), bytes, bytes + 4);
    }
  }
  targets.dtype = DType::parse(problem.labels ? "<i8" : "<f4");
  targets.shape = problem.labels ? std::vector<std::uint64_t>{n} : std::vector<std::uint64_t>{n, k};
  for (std::uint64_t i = 0; i < n; ++i) {
    std::vector<double> score(3, 0.0);
    for (std::uint64_t c = 0; c < 3; ++c) {
      for (std::uint64_t j = 0; j < d; ++j) score[c] += x[i * d + j] * truth[j * 3 + c];
    }
    if (problem.labels) {
      const std::int64_t label = std::max_element(score.begin(), score.end()) - score.begin();
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(&label);
      targets.data.insert(targets.data.end(), bytes, bytes + 8);
      continue;
    }
    for (std::uint64_t t = 0; t < k; ++t) {
      const float value = static_cast<float>(score[t % 3] + 0.3 * normal(random));
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
      targets.data.insert(targets.data.end(), bytes, bytes + 4);
    }
  }
  write_npy(dir.file("x.npy"), features);
  write_npy(dir.file("y.npy"), targets);
  std::string output;
  const std::string common = "write npy --features " + dir.file("x.npy") + " --targets " +
                             dir.file("y.npy") + " --output ";
  REQUIRE(test::run_cli(common + dir.file("data.beton"), output) == 0);
  if (problem.masks) {
    REQUIRE(test::run_cli(common + dir.file("packed.beton") + " --pack-bits", output) == 0);
  }
}

SagaRecipe recipe_for(const test::TempDir& dir, const std::vector<std::string>& overrides) {
  const std::string path = dir.file("saga.toml");
  std::ofstream(path) << "[data]\ntrain = \"" << dir.file("data.beton")
                      << "\"\nnum_val = 100\nbatch_size = 50\nfeatures_npy = \""
                      << dir.file("x.npy") << "\"\ntargets_npy = \"" << dir.file("y.npy")
                      << "\"\nworkers = 1\n[saga]\nlr = 0.02\ntol = 1e-7\nmax_epochs = 3000\n"
                      << "threads = 1\n";
  return load_saga_recipe(path, overrides);
}

// Runs the recipe into a fresh folder under `dir`; returns that folder.
std::string run_into(const test::TempDir& dir, const std::string& name, const SagaRecipe& recipe) {
  const std::string out = dir.file(name);
  std::filesystem::create_directories(out);
  SagaRunOptions options;
  options.run_dir = out;
  options.quiet = true;
  run_saga(recipe, options);
  return out;
}

std::vector<float> floats_of(const std::string& npy) {
  const NpyArray array = read_npy(npy);
  std::vector<float> values(array.data.size() / 4);
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

double largest_magnitude(const std::vector<float>& a) {
  double worst = 0;
  for (const float value : a) worst = std::max(worst, std::fabs(double(value)));
  return worst;
}

// The CSV's rows as fields, header first.
std::vector<std::vector<std::string>> csv_rows(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream text(test::text_of(path));
  for (std::string line; std::getline(text, line);) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(cell);
    rows.push_back(fields);
  }
  return rows;
}

}  // namespace

TEST_CASE("λ_max zeroes every weight and 0.9 λ_max does not", "[saga]") {
  // At λ_max the largest feature sits on the KKT boundary, where the iterates return to 0 only
  // geometrically: the step-size rule with a tight tolerance lets them get there.
  const std::vector<std::string> path = {"saga.num_lambdas=2", "saga.epsilon=0.9",
                                         "saga.do_zero=false", "saga.lookbehind=0",
                                         "saga.tol=1e-9"};
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
    CHECK(std::stod(rows[2][1]) == Approx(0.9 * std::stod(rows[1][1])).epsilon(1e-9));
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
  one.push_back("data.workers=1");
  three.push_back("data.workers=3");
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
