// Bad command lines and inputs: every numeric option is range-checked before any work and
// refused at once with exit status 2 and its range; messages a user can act on for exports,
// .npy inputs and files smaller than a batch; no NaN, infinity or negative zero in reports.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "common/arguments.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/format/npy_array.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"
#include "sources/imagenet_like.hpp"
#include "test_support.hpp"

using namespace ffcv;
using ffcv::tools::Arguments;
using ffcv::tools::UsageError;

namespace {

std::string scalar_file(const test::TempDir& dir, std::uint64_t samples) {
  const std::string path = dir.file("scalars-" + std::to_string(samples) + ".beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {static_cast<std::int64_t>(i), Bytes(20 + i % 7, static_cast<std::uint8_t>(i))};
  };
  DatasetWriter(path,
                {{"label", std::make_shared<IntField>()}, {"blob", std::make_shared<BytesField>()}},
                {.page_size = 1u << 21})
      .write(test::FunctionSource(samples, make));
  return path;
}

std::string image_file(const test::TempDir& dir) {
  const std::string path = dir.file("images.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {test::gradient_image(24, 16, i), static_cast<std::int64_t>(i % 3)};
  };
  DatasetWriter(
      path, {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}},
      {.page_size = 1u << 21})
      .write(test::FunctionSource(6, make));
  return path;
}

// A refused command line answers at once: well under a second on an idle machine. The limits
// leave room for a loaded test machine (the suite runs in parallel); a hang or a blow-up (the
// spinning count, the huge allocation) takes far longer. `ffcv run` first loads LibTorch.
constexpr double kAnswerSeconds = 2.0;
constexpr double kAnswerSecondsWithLibTorch = 10.0;

struct Timed {
  int status;
  double seconds;
};

Timed run_timed(const std::string& arguments, std::string& out) {
  const auto start = std::chrono::steady_clock::now();
  const int status = test::run_cli(arguments, out);
  return {status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

Arguments parsed(const std::vector<std::string>& argv) {
  Arguments args("test", "a test command");
  args.option("n", "N", "an integer", "5")
      .int_range(1, 10)
      .option("p", "P", "a probability")
      .real_range(0, 1)
      .option("size", "SIZE", "a size", "8M")
      .size_range(1u << 20, 1ull << 30)
      .option("free", "N", "an integer without bounds", "0");
  args.parse(argv);
  return args;
}

}  // namespace

TEST_CASE("Arguments checks declared ranges when parsing", "[cli][arguments]") {
  CHECK(parsed({"--n", "10", "--p", "0.25", "--size", "1G"}).get_int("n") == 10);
  CHECK(parsed({"--p", "1"}).get_double("p") == 1.0);
  CHECK(parsed({"--size", "1M"}).get_size("size") == (1u << 20));
  CHECK(parsed({"--free", "-7"}).get_int("free") == -7);
  CHECK_THROWS_WITH(parsed({"--n", "11"}), "--n must be between 1 and 10, got 11");
  CHECK_THROWS_WITH(parsed({"--n", "-5"}), "--n must be between 1 and 10, got -5");
  CHECK_THROWS_WITH(parsed({"--n", "99999999999999999999999"}),
                    Catch::StartsWith("--n must be between 1 and 10"));
  CHECK_THROWS_WITH(parsed({"--n", "2x"}), "--n expects an integer between 1 and 10, got '2x'");
  CHECK_THROWS_WITH(parsed({"--p", "-0.5"}), "--p must be between 0 and 1, got -0.5");
  CHECK_THROWS_WITH(parsed({"--p", "inf"}), Catch::Contains("finite"));
  CHECK_THROWS_WITH(parsed({"--p", "nan"}), Catch::Contains("finite"));
  CHECK_THROWS_WITH(parsed({"--p", "1e999"}), Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(parsed({"--size", "2G"}), "--size must be between 1M and 1G, got 2G");
  CHECK_THROWS_WITH(parsed({"--size", "99999999999999999T"}), Catch::Contains("between 1M and 1G"));
  CHECK_THROWS_WITH(parsed({"--size", "-1"}), Catch::Contains("expects a size"));
  CHECK_THROWS_AS(parsed({"--size", "4K"}), UsageError);
  // -0 reads as 0; bounds known only after parsing.
  CHECK_FALSE(std::signbit(parsed({"--p", "-0"}).get_double("p")));
  CHECK_THROWS_WITH(parsed({"--free", "12"}).get_int("free", 0, 9),
                    "--free must be between 0 and 9, got 12");
  // --help shows the ranges beside the defaults.
  Arguments args = parsed({});
  CHECK_THAT(args.help(), Catch::Contains("[1..10, default: 5]") && Catch::Contains("[0..1]") &&
                              Catch::Contains("[1M..1G, default: 8M]"));
}

TEST_CASE("json_number prints no negative zero and no NaN", "[cli][json]") {
  CHECK(json_number(-0.0, 3) == "0.000");
  CHECK(json_number(-0.0001, 3) == "0.000");
  CHECK(json_number(-0.0, 0) == "0");
  CHECK(json_number(-1.25, 2) == "-1.25");
  CHECK(json_number(2.5, 1) == "2.5");
  CHECK(json_number(std::nan(""), 3) == "null");
  CHECK(json_number(-std::numeric_limits<double>::infinity(), 1) == "null");
  CHECK(json_number(1e300, 1).size() > 300);
}

TEST_CASE("json_quote gives valid JSON for names that are no UTF-8", "[cli][json]") {
  CHECK(json_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xb7") ==
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xb7\"");                       // well-formed: kept
  CHECK(json_quote("caf\xe9.jpg") == "\"caf\\ufffd.jpg\"");                     // Latin-1
  CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");                        // overlong '/'
  CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");             // a surrogate
  CHECK(json_quote("\xe2\x82") == "\"\\ufffd\\ufffd\"");                        // cut short
  CHECK(json_quote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
}

TEST_CASE("json_float reads back as the same double, sign of zero included", "[cli][json]") {
  CHECK(json_float(-0.0) == "-0.0");  // Python's json.loads("-0") would give the integer 0
  CHECK(json_float(0.0) == "0.0");
  CHECK(json_float(3.0) == "3.0");
  CHECK(json_float(0.1) == "0.1");
  CHECK(json_float(-2.5e-300) == "-2.5e-300");
  CHECK(json_float(std::nan("")) == "\"nan\"");
  CHECK(json_float(-std::numeric_limits<double>::infinity()) == "\"-inf\"");
  for (const double value : {1.0 / 3, -123456.789, 6.02214076e23, 5e-324}) {
    CHECK(std::strtod(json_float(value).c_str(), nullptr) == value);
  }
  // Through the CLI: a stored -0.0 in `inspect --sample --json`.
  test::TempDir dir;
  DatasetWriter(dir.file("f.beton"), {{"x", std::make_shared<FloatField>()}})
      .write(test::FunctionSource(
          2, [](std::uint64_t i) { return std::vector<FieldValue>{i == 0 ? -0.0 : 7.0}; }));
  std::string out;
  REQUIRE(test::run_cli("inspect " + dir.file("f.beton") + " --sample 0 --json", out) == 0);
  CHECK_THAT(out, Catch::Contains("{\"value\": -0.0}"));
  REQUIRE(test::run_cli("inspect " + dir.file("f.beton") + " --sample 1 --json", out) == 0);
  CHECK_THAT(out, Catch::Contains("{\"value\": 7.0}"));
}

TEST_CASE("bad numbers on the command line answer exit 2 at once, naming option and range",
          "[cli][bad_input]") {
  test::TempDir dir;
  const std::string file = scalar_file(dir, 4000);
  const std::string out_file = dir.file("out.beton");
  const std::string images = dir.file("images");
  std::filesystem::create_directories(images + "/cls");
  const std::string write_folder = "write folder " + images + " --output " + out_file + " ";
  const std::string write_like =
      "write imagenet-like --images-dir " + dir.file("tree") + " --output " + out_file + " ";
  struct Case {
    std::string arguments, message;
  };
  const std::vector<Case> cases = {
      {write_like + "--count -5", "--count must be between 1 and 10000000, got -5"},
      {write_like + "--count 99999999999", "--count must be between 1 and 10000000"},
      {write_like + "--count 0", "--count must be between 1 and 10000000"},
      {write_like + "--classes 0", "--classes must be between 1 and 1000"},
      {write_like + "--classes 5000", "--classes must be between 1 and 1000"},
      {write_folder + "--jpeg-quality 0", "--jpeg-quality must be between 1 and 100, got 0"},
      {write_folder + "--jpeg-quality 101", "--jpeg-quality must be between 1 and 100"},
      {write_folder + "--compress-probability 1.5",
       "--compress-probability must be between 0 and 1"},
      {write_folder + "--compress-probability nan", "--compress-probability expects a finite"},
      {write_folder + "--max-resolution 0", "--max-resolution must be between 1 and 65500"},
      {write_folder + "--smart-threshold -1", "--smart-threshold expects a size"},
      {write_folder + "--page-size 4K", "--page-size must be between 2M and 2G, got 4K"},
      {write_folder + "--page-size 3M", "--page-size must be a power of two between 2M and 2G"},
      {write_folder + "--page-size 99999999999999999999G", "--page-size must be between 2M and 2G"},
      {write_folder + "--workers 100000", "--workers must be between 0 and 1024, got 100000"},
      {write_folder + "--workers -1", "--workers must be between 0 and 1024"},
      {write_folder + "--seed -1", "--seed must be between 0 and 9223372036854775807"},
      {write_folder + "--write-mode fast", "--write-mode: unknown image write mode 'fast'"},
      {"write fashion-mnist --split validation --output " + out_file,
       "--split must be train or test, got 'validation'"},
      {"bench " + file + " --batch-size 100000000",
       "--batch-size must be between 1 and 1048576, got 100000000"},
      {"bench " + file + " --batch-size 0", "--batch-size must be between 1 and 1048576, got 0"},
      {"bench " + file + " --batch-size 12abc", "--batch-size expects an integer between 1 and"},
      {"bench " + file + " --num-workers 100000",
       "--num-workers must be between 0 and 1024, got 100000"},
      {"bench " + file + " --workers 100000",
       "--num-workers must be between 0 and 1024, got 100000"},
      {"bench " + file + " --window-pages -1", "--window-pages must be between 0 and 1048576"},
      {"bench " + file + " --max-batches -1", "--max-batches must be between 0 and 1000000000"},
      {"bench " + file + " --epochs 0", "--epochs must be between 1 and 100000"},
      {"bench " + file + " --seed -3", "--seed must be between 0 and"},
      {"bench " + file + " --world-size 0", "--world-size must be between 1 and 1024"},
      {"bench " + file + " --rank 2 --world-size 2",
       "--rank must be between 0 and 1 (below --world-size 2), got 2"},
      {"bench " + file + " --batches-ahead 1000", "--batches-ahead must be between 0 and 64"},
      {"bench " + file + " --cache-budget-mib 0",
       "--cache-budget-mib must be between 1 and 1048576, got 0"},
      {"bench " + file + " --cache-budget 0", "--cache-budget-mib must be between 1 and 1048576"},
      {"bench " + file + " --cache-readers 0", "--cache-readers must be between 1 and 256"},
      {"bench " + file + " --storage-latency-ms -1",
       "--storage-latency-ms must be between 0 and 60000"},
      {"bench " + file + " --storage-bandwidth-mbs -1",
       "--storage-bandwidth-mbs must be between 0 and 1000000"},
      {"bench " + file + " --image-size 0", "--image-size must be between 1 and 8192"},
      {"bench " + file + " --order randomly",
       "--order: order must be one of sequential, random, quasi_random, got \"randomly\""},
      {"bench " + file + " --image-decoder blurry", "--image-decoder"},
      {"doctor " + file + " --step-ms -5", "--step-ms must be between 0 and 60000, got -5"},
      {"doctor " + file + " --batches -1", "--batches must be between 0 and 1000000000"},
      {"doctor " + file + " --num-workers 100000", "--num-workers must be between 0 and 1024"},
      {"inspect " + file + " --sample 4000", "--sample must be a sample index between 0 and 3999"},
      {"inspect " + file + " --sample -1", "--sample must be a sample index between 0 and 3999"},
  };
  for (const Case& c : cases) {
    INFO("ffcv " << c.arguments);
    std::string out;
    const Timed run = run_timed(c.arguments, out);
    INFO(out);
    CHECK(run.status == 2);
    CHECK(run.seconds < kAnswerSeconds);
    CHECK_THAT(out, Catch::Contains(c.message));
  }
  // Nothing was made.
  CHECK_FALSE(std::filesystem::exists(out_file));
  CHECK_FALSE(std::filesystem::exists(dir.file("tree")));
}

TEST_CASE("bench and doctor refuse a file smaller than one batch, and print no NaN",
          "[cli][bad_input]") {
  test::TempDir dir;
  const std::string file = scalar_file(dir, 10);
  std::string out;
  for (const std::string command : {"bench ", "doctor "}) {
    INFO(command);
    const Timed run = run_timed(command + file, out);
    CHECK(run.status == 2);
    CHECK(run.seconds < kAnswerSeconds);
    CHECK_THAT(
        out, Catch::Contains(file + " has 10 samples, fewer than one batch of 256 with "
                                    "drop_last; use --drop-last false or a smaller --batch-size"));
  }
  CHECK(test::run_cli("bench " + file + " --batch-size 4 --world-size 4 --rank 3", out) == 2);
  CHECK_THAT(out, Catch::Contains("has 10 samples, 2 for the smallest of 4 ranks"));

  // With --drop-last false they run; no figure is NaN, infinite or a negative zero.
  const std::vector<std::string> runs = {
      "bench " + file + " --drop-last false",
      "bench " + file + " --drop-last false --json",
      "doctor " + file + " --drop-last false",
      "doctor " + file + " --drop-last false --json",
      "doctor " + file + " --drop-last false --step-ms 1 --json",
      "bench " + file + " --drop-last false --max-batches 0 --epochs 1 --json"};
  for (const std::string& arguments : runs) {
    INFO(arguments);
    REQUIRE(test::run_cli(arguments, out) == 0);
    INFO(out);
    for (const char* bad : {"nan", "NaN", "inf", "-0.0", " -0,", ": -0"}) {
      CHECK_THAT(out, !Catch::Contains(bad));
    }
    if (arguments.starts_with("doctor") && arguments.ends_with("--json")) {
      // One batch an epoch: the doctor repeats the epochs for a measurement long enough.
      CHECK_THAT(out, !Catch::Contains("\"measured_epochs\": 1,") &&
                          !Catch::Contains("too few for a reliable diagnosis"));
    }
  }
}

TEST_CASE("a batch ring beyond the available memory is refused before it is allocated",
          "[cli][bad_input]") {
  test::TempDir dir;
  const std::string file = image_file(dir);
  std::string out;
  // 2^20 samples of 8192 x 8192 x 3 bytes: petabytes.
  const Timed run =
      run_timed("bench " + file +
                    " --drop-last false --batch-size 1048576 --image-decoder center_crop "
                    "--image-size 8192",
                out);
  CHECK(run.status == 2);
  CHECK(run.seconds < kAnswerSeconds);
  CHECK_THAT(out, Catch::Contains("of memory available") &&
                      Catch::Contains("use a smaller --batch-size or --batches-ahead") &&
                      !Catch::Contains("bad_alloc"));
}

TEST_CASE("inspect --export refuses folders and unknown extensions in one line",
          "[cli][bad_input]") {
  test::TempDir dir;
  const std::string file = image_file(dir);
  std::string out;
  CHECK(test::run_cli("inspect " + file + " --export 0 " + dir.path(), out) == 2);
  CHECK_THAT(out, Catch::Contains("--export " + dir.path() + ": is a directory"));
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
#ifdef FFCV_HAVE_IMGCODECS
  CHECK(test::run_cli("inspect " + file + " --export 0 " + dir.file("a.xyz"), out) == 2);
  CHECK_THAT(out, Catch::Contains("unknown extension '.xyz'") && Catch::Contains(".png") &&
                      !Catch::Contains("OpenCV"));
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(test::run_cli("inspect " + file + " --export 0 " + dir.file("noext"), out) == 2);
  CHECK_THAT(out, Catch::Contains("no extension"));
  CHECK(test::run_cli("inspect " + file + " --export 0 " + dir.file("none/a.png"), out) == 1);
  CHECK_THAT(out, Catch::Contains("no folder"));
  CHECK(test::run_cli("inspect " + file + " --export 1 " + dir.file("b.PNG"), out) == 0);
  CHECK(std::filesystem::exists(dir.file("b.PNG")));
#endif
  CHECK_FALSE(std::filesystem::exists(dir.file("a.xyz")));
}

TEST_CASE("write npy names a folder or a file that is no .npy", "[cli][bad_input]") {
  test::TempDir dir;
  NpyArray targets{DType::parse("<i8"), {3}, std::vector<std::uint8_t>(24, 0)};
  write_npy(dir.file("y.npy"), targets);
  test::write_file(dir.file("text.npy"), {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  std::filesystem::create_directories(dir.file("folder.npy"));

  CHECK_THROWS_WITH(read_npy(dir.file("folder.npy")), dir.file("folder.npy") + ": is a directory");
  CHECK_THROWS_WITH(read_npy(dir.file("text.npy")),
                    Catch::StartsWith(dir.file("text.npy") + ": not a .npy file (bad magic"));
  CHECK_THROWS_AS(read_npy(dir.file("absent.npy")), IoError);

  std::string out;
  const std::string output = dir.file("out.beton");
  CHECK(test::run_cli("write npy --features " + dir.file("folder.npy") + " --targets " +
                          dir.file("y.npy") + " --output " + output,
                      out) == 1);
  CHECK_THAT(out,
             Catch::Contains("folder.npy: is a directory") && !Catch::Contains("basic_filebuf"));
  CHECK(test::run_cli("write npy --features " + dir.file("text.npy") + " --targets " +
                          dir.file("y.npy") + " --output " + output,
                      out) == 1);
  CHECK_THAT(out, Catch::Contains("text.npy: not a .npy file (bad magic"));
  CHECK_FALSE(std::filesystem::exists(output));
}

TEST_CASE("write npy --pack-bits refuses features that are not bool", "[cli][bad_input]") {
  test::TempDir dir;
  NpyArray features{DType::parse("<f4"), {3, 4}, std::vector<std::uint8_t>(48, 0)};
  NpyArray targets{DType::parse("<i8"), {3}, std::vector<std::uint8_t>(24, 0)};
  write_npy(dir.file("x.npy"), features);
  write_npy(dir.file("y.npy"), targets);
  const std::string output = dir.file("out.beton");
  std::string out;
  CHECK(test::run_cli("write npy --features " + dir.file("x.npy") + " --targets " +
                          dir.file("y.npy") + " --output " + output + " --pack-bits",
                      out) == 1);
  CHECK_THAT(out, Catch::StartsWith("ffcv write: error: --pack-bits needs boolean features") &&
                      Catch::Contains("'<f4'") && Catch::Contains("x.npy"));
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(output));
  CHECK_FALSE(std::filesystem::exists(output + ".sources.json"));

  // uint8 is refused too: a mask is saved as bool.
  features.dtype = DType::parse("|u1");
  features.data.resize(12);
  write_npy(dir.file("x.npy"), features);
  CHECK(test::run_cli("write npy --features " + dir.file("x.npy") + " --targets " +
                          dir.file("y.npy") + " --output " + output + " --pack-bits",
                      out) == 1);
  CHECK_THAT(out, Catch::Contains("'|u1'"));
  CHECK(test::run_cli("write fashion-mnist --output " + output + " --pack-bits", out) == 2);
  CHECK_THAT(out, Catch::Contains("--pack-bits applies to KIND npy only"));
  CHECK_FALSE(std::filesystem::exists(output));
}

TEST_CASE("ffcv run bounds --nproc and --stop-after-steps before reading the recipe",
          "[cli][bad_input]") {
  const auto trainer = std::filesystem::path(FFCV_CLI_PATH).parent_path() / "ffcv-train";
  if (!std::filesystem::exists(trainer)) return;  // a build without LibTorch has no `ffcv run`
  std::string out;
  for (const std::string nproc : {"0", "-1", "5000"}) {
    const Timed run = run_timed("run /nonexistent/recipe.toml --nproc " + nproc, out);
    CHECK(run.status == 2);
    CHECK(run.seconds < kAnswerSecondsWithLibTorch);
    CHECK_THAT(out, Catch::Contains("--nproc must be between 1 and 1024, got " + nproc));
  }
  CHECK(test::run_cli("run /nonexistent/recipe.toml --stop-after-steps 0", out) == 2);
  CHECK_THAT(out, Catch::Contains("--stop-after-steps must be between 1 and"));
}

TEST_CASE("generate_imagenet_like refuses a count outside 1..10000000 before any work",
          "[cli][bad_input]") {
  test::TempDir dir;
  tools::ImagenetLikeOptions options;
  options.output_dir = dir.file("tree");
  options.photo_dirs = {dir.path()};  // no photos: the count must be judged first
  for (const std::uint64_t count : {std::uint64_t{0}, tools::kMaxImagenetLikeCount + 1}) {
    options.count = count;
    CHECK_THROWS_WITH(
        tools::generate_imagenet_like(options),
        "imagenet-like: the number of images must be in 1..10000000, not " + std::to_string(count));
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("tree")));
}

namespace {

// Runs the CLI; returns its exit status and puts only its stderr in `errors`.
int run_cli_stderr(const std::string& arguments, std::string& errors) {
  const std::string command = std::string(FFCV_CLI_PATH) + " " + arguments + " 2>&1 >/dev/null";
  errors.clear();
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[4096];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) errors.append(buffer, got);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool has_trainer() {
  return std::filesystem::exists(std::filesystem::path(FFCV_CLI_PATH).parent_path() / "ffcv-train");
}

// A recipe whose data files exist (the recipe itself stands in for them: nothing here reads
// them), with `grid` appended.
std::string grid_recipe(const test::TempDir& dir, const std::string& grid) {
  const std::string path = dir.file("grid.toml");
  std::ofstream(path) << "[data]\ntrain = \"" << path << "\"\nval = \"" << path
                      << "\"\n[model]\nnum_classes = 10\n"
                      << grid;
  return path;
}

}  // namespace

TEST_CASE("ffcv run: a bad grid value exits 2 naming the option, before any work",
          "[cli][bad_input][grid]") {
  if (!has_trainer()) return test::skip_test("a build without LibTorch has no `ffcv run`");
  test::TempDir dir;
  const std::string recipe = grid_recipe(dir, "[grid]\nlr.lr = [0.1, 0.2]\n");
  const std::string out = dir.file("out");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--grid lr.lr=", "--grid lr.lr=: an empty value"},
      {"--grid lr.lr", "--grid lr.lr: expected section.key=value1,value2"},
      {"--grid lr.rate=1,2", "--grid lr.rate=1,2: 'lr.rate' is not a recipe key"},
      {"--grid data.seed=1,2 --grid data.seed=3", "data.seed is given by two --grid options"},
      {"--placement bogus", "--placement must be sequential, processes, threads or shared"},
      {"--placement ''", "--placement needs a value, got an empty one"},
      {"--output-dir ''", "--output-dir needs a value, got an empty one"},
      {"--set lr.lr=0.3", "--set lr.lr=0.3: the grid sweeps lr.lr (0.1, 0.2)"},
      {"--no-grid --grid lr.lr=1", "--grid belongs to a grid, and --no-grid trains"},
  };
  for (const auto& [arguments, message] : cases) {
    std::string output;
    INFO(arguments);
    const Timed run =
        run_timed("run " + recipe + " " + arguments +
                      (arguments.find("output-dir") == std::string::npos ? " --output-dir " + out
                                                                         : std::string()),
                  output);
    INFO(output);
    CHECK(run.status == 2);
    CHECK(run.seconds < kAnswerSecondsWithLibTorch);
    CHECK_THAT(output, Catch::Contains(message) && !Catch::Contains(recipe + ":"));
    CHECK_FALSE(std::filesystem::exists(out));
  }
  // A job array's task id that is no index.
  for (const std::string task : {"-1", "x", "18446744073709551616"}) {
    std::string output;
    CHECK(test::run_cli("run " + recipe + " --output-dir " + out, output,
                        "SLURM_ARRAY_TASK_ID='" + task + "' ") == 2);
    CHECK_THAT(output,
               Catch::Contains("SLURM_ARRAY_TASK_ID=\"" + task + "\" is not a point index"));
  }
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("ffcv run refuses a grid of which not even one point fits in memory",
          "[cli][bad_input][grid]") {
  if (!has_trainer()) return test::skip_test("a build without LibTorch has no `ffcv run`");
  test::TempDir dir;
  const std::string recipe = grid_recipe(dir, "[grid]\nlr.lr = [0.1, 0.2]\n");
  const std::string out = dir.file("out");
  std::string output;
  // A million images of 4096 x 4096 per batch: petabytes, on any machine.
  CHECK(test::run_cli(
            "run " + recipe + " --set training.batch_size=1000000 --set resolution.min_res=4096" +
                " --set resolution.max_res=4096 --set training.device=cpu" + " --output-dir " + out,
            output) == 2);
  CHECK_THAT(output, Catch::Contains("the grid needs about") &&
                         Catch::Contains("TiB of memory even one point at a time") &&
                         Catch::Contains("available") && Catch::Contains("--no-memory-check"));
  CHECK_FALSE(std::filesystem::exists(out));
  // --no-memory-check starts it anyway, with the estimate as a warning; here its points then fail
  // at once, on data files that are no datasets.
  std::string errors;
  CHECK(run_cli_stderr("run " + recipe +
                           " --set training.batch_size=1000000 --set resolution.min_res=4096" +
                           " --set resolution.max_res=4096 --set training.device=cpu" +
                           " --no-memory-check --quiet --output-dir " + out,
                       errors) == 1);
  INFO(errors);
  CHECK_THAT(errors, Catch::Contains("warning: the grid needs about") &&
                         Catch::Contains("starting anyway (--no-memory-check)") &&
                         Catch::Contains("grid: point 0 FAILED"));
  CHECK(std::filesystem::exists(out + "/point-000/error.txt"));
}

TEST_CASE("a failed grid point's error reaches stderr, even with --quiet", "[cli][grid]") {
  if (!has_trainer()) return test::skip_test("a build without LibTorch has no `ffcv run`");
  test::TempDir dir;
  const std::string recipe = grid_recipe(dir, "");
  for (const std::string placement : {"sequential", "shared"}) {
    INFO(placement);
    const std::string out = dir.file("out-" + placement);
    std::string errors;
    // Neither value is an order the recipe accepts: both points fail as they load.
    CHECK(run_cli_stderr("run " + recipe + " --grid data.order=shuffled,backwards --placement " +
                             placement + " --quiet --output-dir " + out,
                         errors) == 1);
    INFO(errors);
    CHECK_THAT(errors, Catch::Contains("grid: point 0 FAILED") &&
                           Catch::Contains("grid: point 1 FAILED") && Catch::Contains("shuffled") &&
                           Catch::Contains("backwards"));
    CHECK(std::filesystem::exists(out + "/point-001/error.txt"));
  }
}

TEST_CASE("ffcv run: a --set the recipe refuses exits 2, an error in the recipe file 1",
          "[cli][bad_input]") {
  if (!has_trainer()) return test::skip_test("a build without LibTorch has no `ffcv run`");
  test::TempDir dir;
  const std::string recipe = grid_recipe(dir, "");
  const std::string out = dir.file("out");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set training.epochs=0", "--set training.epochs=0: "},
      {"--set training.batch_size=-5", "--set training.batch_size=-5: "},
      {"--set lr.lr=fast", "--set lr.lr=fast: "},
      {"--set training.epoch=3", "did you mean 'training.epochs'"},
      {"--set data.order=shuffled", "--set data.order=shuffled: "},
      // The same with a grid, and in --print-recipe.
      {"--set training.epochs=0 --grid lr.lr=0.1,0.2", "--set training.epochs=0: "},
      {"--set training.epochs=0 --print-recipe", "--set training.epochs=0: "},
  };
  for (const auto& [arguments, message] : cases) {
    std::string output;
    INFO(arguments);
    const Timed run = run_timed("run " + recipe + " " + arguments + " --output-dir " + out, output);
    INFO(output);
    CHECK(run.status == 2);
    CHECK(run.seconds < kAnswerSecondsWithLibTorch);
    CHECK_THAT(output, Catch::Contains(message) && Catch::Contains("(see ffcv run --help)"));
    CHECK_FALSE(std::filesystem::exists(out));
  }
  // The recipe file's own value out of range: an error of the file, named with its line.
  std::ofstream(recipe, std::ios::app) << "[training]\nepochs = 0\n";
  std::string output;
  CHECK(test::run_cli("run " + recipe + " --output-dir " + out, output) == 1);
  CHECK_THAT(output, Catch::Contains(recipe + ":") && Catch::Contains("training.epochs"));
}

TEST_CASE("ffcv run: --grid on a recipe with a grid of its own says that it adds to it",
          "[cli][grid]") {
  if (!has_trainer()) return test::skip_test("a build without LibTorch has no `ffcv run`");
  test::TempDir dir;
  const std::string recipe = grid_recipe(dir, "[grid]\nlr.lr = [0.1, 0.2]\n");
  std::string errors;
  // A new axis: every combination, 2 x 2 points.
  CHECK(run_cli_stderr("run " + recipe + " --grid data.seed=1,2 --print-recipe", errors) == 0);
  CHECK_THAT(errors, Catch::Contains("note: the recipe's own [grid] sweeps lr.lr (2 values); "
                                     "--grid adds data.seed (2 values): 4 points in all"));
  std::string output;
  CHECK(test::run_cli("run " + recipe + " --grid data.seed=1,2 --print-recipe", output) == 0);
  CHECK_THAT(output, Catch::Contains("# point 3: lr.lr=0.2 data.seed=2"));
  // The recipe's own axis: its values replaced.
  CHECK(run_cli_stderr("run " + recipe + " --grid lr.lr=0.3,0.4,0.5 --print-recipe", errors) == 0);
  CHECK_THAT(errors, Catch::Contains("--grid replaces the values of lr.lr (3 values): 3 points"));
  // Nothing to say without a [grid] of the recipe's own, or with --quiet.
  const std::string plain = dir.file("plain.toml");
  std::ofstream(plain) << "[data]\ntrain = \"" << recipe << "\"\nval = \"" << recipe << "\"\n";
  CHECK(run_cli_stderr("run " + plain + " --grid data.seed=1,2 --print-recipe", errors) == 0);
  CHECK(errors.empty());
  CHECK(run_cli_stderr("run " + recipe + " --grid data.seed=1,2 --print-recipe --quiet", errors) ==
        0);
  CHECK(errors.empty());
}
