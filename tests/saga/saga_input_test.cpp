// What a SAGA run does with data it cannot fit as given: a --pack-bits file is unpacked as its
// sidecar says (or refused when nothing says it is packed), a NaN or an infinity is named by
// its row, big-endian arrays are converted when written or refused when read in place, and a
// run that would not fit in memory is refused before its first pass, with the estimate.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>

#include "ffcv/format/npy_array.hpp"
#include "ffcv/saga/saga_memory.hpp"
#include "ffcv/saga/saga_recipe.hpp"
#include "ffcv/saga/saga_run.hpp"
#include "ffcv/util/errors.hpp"
#include "saga_test_support.hpp"

namespace ffcv::saga {
using namespace test_saga;
using Catch::Contains;

TEST_CASE("a --pack-bits file is unpacked as its sidecar says, or refused", "[saga]") {
  test::TempDir dir;
  Problem problem;
  problem.masks = true;
  problem.features = 21;  // not a multiple of 8
  write_problem(problem, dir);
  const std::vector<std::string> base = {"saga.lambdas=[0.3, 0.1]", "saga.max_epochs=20"};
  // The bool file: its features are the 0/1 values themselves, the reference.
  const std::string plain = run_into(dir, "plain", recipe_for(dir, base));
  const std::vector<std::string> packed = with(base, "data.train=" + dir.file("packed.beton"));

  // No data.mask_bits: packed_bits in packed.beton.sources.json says d.
  const std::string from_sidecar = run_into(dir, "sidecar", recipe_for(dir, packed));
  CHECK(test::read_file(from_sidecar + "/path_weights.npy") ==
        test::read_file(plain + "/path_weights.npy"));
  CHECK_THAT(test::text_of(from_sidecar + "/summary.json"), Contains("\"features\": 21"));
  CHECK_THAT(test::text_of(from_sidecar + "/recipe.toml"), Contains("mask_bits = 21"));

  // A recipe that disagrees with the sidecar is refused, naming both.
  CHECK_THROWS_WITH(run_into(dir, "wrong", recipe_for(dir, with(packed, "data.mask_bits=20"))),
                    Contains("data.mask_bits = 20") && Contains("packed from 21"));
  CHECK_THROWS_WITH(run_into(dir, "no", recipe_for(dir, with(packed, "data.features_packed=no"))),
                    Contains("data.features_packed") && Contains("packed.beton.sources.json"));

  // Without the sidecar nothing says the bytes are packed: refused, not fitted as byte values.
  std::filesystem::remove(dir.file("packed.beton.sources.json"));
  CHECK_THROWS_WITH(run_into(dir, "bare", recipe_for(dir, packed)),
                    Contains("uint8") && Contains("data.mask_bits = d") &&
                        Contains("data.features_packed = \"no\""));
  // The command line says the same and writes nothing into the run folder.
  std::ofstream(dir.file("bare.toml")) << saga_recipe_to_toml(recipe_for(dir, packed));
  std::string output;
  CHECK(test::run_cli("run " + dir.file("bare.toml") + " --output-dir " + dir.file("bare_cli"),
                      output) == 1);
  CHECK_THAT(output, Contains("data.mask_bits = d"));
  CHECK_FALSE(std::filesystem::exists(dir.file("bare_cli/recipe.toml")));
  CHECK_FALSE(std::filesystem::exists(dir.file("bare_cli/path.csv")));
  // Told d, the run unpacks them as with the sidecar.
  const std::string told =
      run_into(dir, "told", recipe_for(dir, with(packed, "data.mask_bits=21")));
  CHECK(test::read_file(told + "/path_weights.npy") ==
        test::read_file(plain + "/path_weights.npy"));
}

TEST_CASE("a NaN or an infinity in the rows is refused naming its row", "[saga]") {
  test::TempDir dir;
  write_problem({}, dir);  // 500 rows: 400 training, 100 validation
  const NpyArray clean = read_npy(dir.file("x.npy"));
  const auto poisoned = [&](const std::string& name, std::uint64_t row, std::uint64_t column,
                            float value) {
    NpyArray x = clean;
    set_float(x, row, column, value);
    write_npy(dir.file(name + ".npy"), x);
    write_beton(dir, name + ".npy", name + ".beton");
  };
  poisoned("nan", 123, 4, std::numeric_limits<float>::quiet_NaN());
  CHECK_THROWS_WITH(run_into(dir, "a", recipe_for(dir, {"data.train=" + dir.file("nan.beton")})),
                    Contains("nan.beton field 'features'") && Contains("row 123") &&
                        Contains("feature 4") && !Contains("saga.lr"));
  // The baseline names the .npy file it read.
  CHECK_THROWS_WITH(
      run_into(dir, "b",
               recipe_for(dir, {"data.loader=mmap", "data.features_npy=" + dir.file("nan.npy")})),
      Contains("nan.npy") && Contains("row 123") && Contains("feature 4"));
  // A validation row, found after the training rows' pass, and an infinity.
  poisoned("inf", 450, 0, std::numeric_limits<float>::infinity());
  CHECK_THROWS_WITH(run_into(dir, "c", recipe_for(dir, {"data.train=" + dir.file("inf.beton")})),
                    Contains("row 450") && Contains("inf") && Contains("feature 0"));
  CHECK_THROWS_WITH(run_into(dir, "d",
                             recipe_for(dir, {"data.train=" + dir.file("inf.beton"),
                                              "saga.objective=lasso_path"})),
                    Contains("row 450") && Contains("feature 0"));
}

TEST_CASE("big-endian arrays are converted when written and refused when read in place", "[saga]") {
  test::TempDir dir;
  write_problem({}, dir);
  NpyArray big = read_npy(dir.file("x.npy"));
  big.dtype = DType::parse(">f4");
  for (std::size_t at = 0; at + 4 <= big.data.size(); at += 4) {
    std::swap(big.data[at], big.data[at + 3]);
    std::swap(big.data[at + 1], big.data[at + 2]);
  }
  write_npy(dir.file("big.npy"), big);
  write_beton(dir, "big.npy", "big.beton");
  const std::vector<std::string> base = {"saga.lambdas=[0.3, 0.1]", "saga.max_epochs=20"};
  // `ffcv write npy` stores the numbers little-endian: the same path as from the <f4 file.
  const std::string little = run_into(dir, "little", recipe_for(dir, base));
  const std::string converted = run_into(
      dir, "converted", recipe_for(dir, with(base, "data.train=" + dir.file("big.beton"))));
  CHECK(test::read_file(converted + "/path_weights.npy") ==
        test::read_file(little + "/path_weights.npy"));
  // The baseline reads the .npy in place: refused, with how to save it little-endian.
  CHECK_THROWS_WITH(run_into(dir, "mmap",
                             recipe_for(dir, with(with(base, "data.loader=mmap"),
                                                  "data.features_npy=" + dir.file("big.npy")))),
                    Contains("big.npy") && Contains("big-endian") && Contains("newbyteorder('<')"));
}

TEST_CASE("a SAGA run that cannot fit in memory is refused before its first pass", "[saga]") {
  // d = 5,000,000 boolean features, bit-packed (625,000 bytes a row), in 3 rows: the file is
  // small, the model is not. 101 path points of 5M float32 weights are 2.02e9 bytes.
  constexpr std::uint64_t d = 5'000'000;
  test::TempDir dir;
  NpyArray x, y;
  x.dtype = DType::parse("bool");
  x.shape = {3, d};
  x.data.assign(3 * d, 0);
  for (std::uint64_t i = 0; i < 3 * d; i += 7) x.data[i] = 1;
  y.dtype = DType::parse("<f4");
  y.shape = {3};
  for (const float value : {0.5f, -1.0f, 2.0f}) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
    y.data.insert(y.data.end(), bytes, bytes + 4);
  }
  write_npy(dir.file("x.npy"), x);
  write_npy(dir.file("y.npy"), y);
  write_beton(dir, "x.npy", "wide.beton", "--pack-bits");
  const std::vector<std::string> wide = {"data.train=" + dir.file("wide.beton"), "data.num_val=1",
                                         "data.batch_size=1", "saga.path_weights=true",
                                         "saga.memory_limit_gib=1"};
  const std::string out = dir.file("wide");
  std::string message;
  try {
    run_into(dir, "wide", recipe_for(dir, wide));
  } catch (const ConfigError& error) {
    message = error.what();
  }
  INFO(message);
  CHECK_THAT(message, Contains("needs about") && Contains("1.0 GiB of saga.memory_limit_gib") &&
                          Contains("path weights 1.9 GiB") &&
                          Contains("101 points x 5000000 features x 1 outputs x 4 bytes") &&
                          Contains("saga.path_weights = false") &&
                          Contains("saga.memory_limit_gib=N"));
  // Nothing was started: no recipe.toml, no path.
  CHECK_FALSE(std::filesystem::exists(out + "/recipe.toml"));
  CHECK_FALSE(std::filesystem::exists(out + "/path.csv"));

  // The estimate itself: each part from the sizes, and the limit from the machine when unset.
  SagaRecipe recipe = recipe_for(dir, wide);
  MemorySizes sizes;
  sizes.features = d;
  sizes.outputs = 1;
  sizes.table_rows = 2;
  sizes.stored_row_bytes = d / 8;
  const std::vector<MemoryPart> parts = estimate_saga_memory(recipe, sizes);
  double total = 0, path = 0;
  for (const MemoryPart& part : parts) {
    total += part.bytes;
    if (part.name == "path weights") path = part.bytes;
  }
  CHECK(path == 101.0 * d * 4);
  CHECK(total > path);
  recipe.saga.memory_limit_gib = 0;
  CHECK_THROWS_WITH(check_saga_memory(parts, recipe.saga, 1ull << 30),
                    Contains("more than the 1.0 GiB available"));
  CHECK_NOTHROW(check_saga_memory(parts, recipe.saga, 1ull << 40));
  recipe.saga.path_weights = false;
  double without = 0;
  for (const MemoryPart& part : estimate_saga_memory(recipe, sizes)) without += part.bytes;
  CHECK(without == Approx(total - path));
}

}  // namespace ffcv::saga
