// What the SAGA tests share: small regression problems written as .beton by `ffcv write npy`,
// recipes over them, runs into temporary folders, and readers of the run folder's files.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ffcv/format/npy_array.hpp"
#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_run.hpp"
#include "test_support.hpp"

namespace ffcv::saga::test_saga {

// y = X w* + noise with ceil(d / spacing) nonzero weights per target (features c, c + spacing,
// ... of truth column c); X standard normal (float32) or, with `masks`, Bernoulli(1/2) booleans.
struct Problem {
  std::uint64_t rows = 500, features = 12, targets = 2;
  bool masks = false;
  bool labels = false;  // class labels 0..2 from the first three weight columns (argmax)
  std::uint64_t spacing = 4;
  double noise = 0.3;  // the noise's standard deviation
};

inline void write_problem(const Problem& problem, const test::TempDir& dir) {
  std::mt19937_64 random(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::bernoulli_distribution coin(0.5);
  const std::uint64_t n = problem.rows, d = problem.features, k = problem.targets;
  std::vector<double> x(n * d), truth(d * 3, 0.0);
  for (std::uint64_t c = 0; c < 3; ++c) {
    for (std::uint64_t j = c; j < d; j += problem.spacing) {
      truth[j * 3 + c] = (j % 2 ? 1.5 : -2.0) / static_cast<double>(c + 1);
    }
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
      const float value = static_cast<float>(score[t % 3] + problem.noise * normal(random));
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

// Writes `npy_name` (an array in `dir`) and y.npy as the .beton `beton_name` in `dir`.
inline void write_beton(const test::TempDir& dir, const std::string& npy_name,
                        const std::string& beton_name, const std::string& flags = "") {
  std::string output;
  const int code =
      test::run_cli("write npy --features " + dir.file(npy_name) + " --targets " +
                        dir.file("y.npy") + " --output " + dir.file(beton_name) + " " + flags,
                    output);
  INFO(output);
  REQUIRE(code == 0);
}

// Sets one value of a 2-D little-endian float32 array.
inline void set_float(NpyArray& array, std::uint64_t row, std::uint64_t column, float value) {
  std::memcpy(array.data.data() + (row * array.shape[1] + column) * 4, &value, 4);
}

inline SagaRecipe recipe_for(const test::TempDir& dir, const std::vector<std::string>& overrides) {
  const std::string path = dir.file("saga.toml");
  std::ofstream(path) << "[data]\ntrain = \"" << dir.file("data.beton")
                      << "\"\nnum_val = 100\nbatch_size = 50\nfeatures_npy = \""
                      << dir.file("x.npy") << "\"\ntargets_npy = \"" << dir.file("y.npy")
                      << "\"\nworkers = 1\n[saga]\nlr = 0.02\ntol = 1e-7\nmax_epochs = 3000\n"
                      << "threads = 1\npath_weights = true\n";
  return load_saga_recipe(path, overrides);
}

// Runs the recipe into a fresh folder under `dir`; returns that folder.
inline std::string run_into(const test::TempDir& dir, const std::string& name,
                            const SagaRecipe& recipe) {
  const std::string out = dir.file(name);
  std::filesystem::create_directories(out);
  SagaRunOptions options;
  options.run_dir = out;
  options.quiet = true;
  run_saga(recipe, options);
  return out;
}

inline std::vector<float> floats_of(const std::string& npy) {
  const NpyArray array = read_npy(npy);
  std::vector<float> values(array.data.size() / 4);
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

inline std::vector<double> doubles_of(const std::string& npy) {
  const NpyArray array = read_npy(npy);
  std::vector<double> values(array.data.size() / 8);
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

// The numbers of the flat JSON list `"name": [a, b, ...]` in `json` (null reads as NaN).
inline std::vector<double> json_list(const std::string& json, const std::string& name) {
  const std::size_t at = json.find("\"" + name + "\": [");
  REQUIRE(at != std::string::npos);
  const std::size_t begin = json.find('[', at) + 1, end = json.find(']', begin);
  std::vector<double> values;
  std::istringstream items(json.substr(begin, end - begin));
  for (std::string item; std::getline(items, item, ',');) {
    values.push_back(item.find("null") != std::string::npos ? std::nan("") : std::stod(item));
  }
  return values;
}

// `overrides` and one more.
inline std::vector<std::string> with(std::vector<std::string> overrides, const std::string& more) {
  overrides.push_back(more);
  return overrides;
}

inline double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

inline double largest_magnitude(const std::vector<float>& a) {
  double worst = 0;
  for (const float value : a) worst = std::max(worst, std::fabs(double(value)));
  return worst;
}

// The CSV's rows as fields, header first.
inline std::vector<std::vector<std::string>> csv_rows(const std::string& path) {
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

}  // namespace ffcv::saga::test_saga
