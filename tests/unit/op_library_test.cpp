// User operations loaded from shared libraries: the example library through the registry, a
// Loader and the CLI, and each way a library can be refused.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cli/loader_arguments.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_library.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::TempDir;

namespace {

constexpr std::uint64_t kWidth = 5, kHeight = 4, kSamples = 40;

std::uint8_t pixel_value(std::uint64_t sample, std::uint64_t byte) {
  return static_cast<std::uint8_t>(sample * 31 + byte * 7);
}

// Raw 5x4 images whose bytes encode (sample, position), and the index as label.
std::string write_images(const TempDir& dir) {
  const std::string path = dir.file("images.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    RgbImage image{kWidth, kHeight, std::vector<std::uint8_t>(kWidth * kHeight * 3)};
    for (std::size_t b = 0; b < image.pixels.size(); ++b) image.pixels[b] = pixel_value(i, b);
    return {image, static_cast<std::int64_t>(i)};
  };
  DatasetWriter(path,
                {{"image", std::make_shared<RgbImageField>()},  // raw: bytes kept exactly
                 {"label", std::make_shared<IntField>()}},
                {.page_size = 1u << 21})
      .write(test::FunctionSource(kSamples, make));
  return path;
}

bool has_operation_listed(const std::string& name) {
  const auto listed = OpRegistry::global().operations();
  return std::any_of(listed.begin(), listed.end(),
                     [&](const auto& entry) { return entry.first == name; });
}

std::string load_error(const std::string& path) {
  try {
    load_op_library(path);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("an op library adds its operations to the global registry once", "[op_library]") {
  load_op_library(FFCV_EXAMPLE_OPS_PATH);
  CHECK(OpRegistry::global().has_operation("swap_channels"));
  CHECK(has_operation_listed("swap_channels"));
  const std::size_t count = OpRegistry::global().operations().size();
  // Loading again, by the same or another name of the file, is a no-op.
  CHECK_NOTHROW(load_op_library(FFCV_EXAMPLE_OPS_PATH));
  std::string other_name = FFCV_EXAMPLE_OPS_PATH;
  other_name.insert(other_name.rfind('/'), "/.");
  CHECK_NOTHROW(load_op_library(other_name));
  CHECK(OpRegistry::global().operations().size() == count);
  // The library's own checks run in the program: a bad order is a ConfigError.
  CHECK_THROWS_WITH(OpRegistry::global().make_operation(
                        "swap_channels", OpParams({{"order", std::vector<double>{0, 0, 1}}})),
                    Catch::Contains("permutation"));
}

TEST_CASE("a loader pipeline runs the library's operation byte for byte", "[op_library]") {
  load_op_library(FFCV_EXAMPLE_OPS_PATH);
  TempDir dir;
  const std::string path = write_images(dir);
  const std::vector<std::uint64_t> order = {1, 2, 0};
  PipelineSpec image{"image",
                     "image",
                     nullptr,
                     {OpRegistry::global().make_operation(
                         "swap_channels", OpParams({{"order", std::vector<double>{1, 2, 0}}}))}};
  LoaderOptions options;
  options.batch_size = 16;
  options.drop_last = false;
  options.num_workers = 3;
  Loader loader(path, {image}, options);
  std::uint64_t seen = 0;
  auto it = loader.epoch(0);
  while (auto batch = it.next()) {
    const BatchTensor images = batch->output("image");
    REQUIRE(images.state->shape == std::vector<std::uint64_t>{kHeight, kWidth, 3});
    for (std::uint64_t s = 0; s < batch->size(); ++s) {
      const std::uint64_t sample = batch->indices()[s];
      const std::uint8_t* out = images.data + s * kWidth * kHeight * 3;
      for (std::uint64_t p = 0; p < kWidth * kHeight; ++p) {
        for (std::uint64_t c = 0; c < 3; ++c) {
          REQUIRE(out[3 * p + c] == pixel_value(sample, 3 * p + order[c]));
        }
      }
      ++seen;
    }
  }
  CHECK(seen == kSamples);
}

TEST_CASE("op library errors are one clear ConfigError each", "[op_library][errors]") {
  TempDir dir;
  CHECK_THAT(load_error(dir.file("absent.so")),
             Catch::Contains(dir.file("absent.so")) && Catch::Contains("no such file"));

  const std::string text = dir.file("notes.so");
  const std::string line = "a text file is not a shared library\n";
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.insert(bytes.end(), line.begin(), line.end());
  test::write_file(text, bytes);
  CHECK_THAT(load_error(text),
             Catch::StartsWith("op library " + text + ": cannot load: ") && Catch::Contains("ELF"));

  CHECK_THAT(load_error(FFCV_TEST_OPS_NO_ABI),
             Catch::Contains("does not export ffcv_op_library_abi") &&
                 !Catch::Contains("ffcv_register_ops"));
  CHECK_THAT(load_error(FFCV_TEST_OPS_WRONG_ABI),
             Catch::Contains("ABI " + std::to_string(kOpLibraryAbi + 1000)) &&
                 Catch::Contains("this loader has ABI " + std::to_string(kOpLibraryAbi)));
  CHECK_FALSE(OpRegistry::global().has_operation("fixture_wrong_abi"));
  CHECK_THAT(load_error(FFCV_TEST_OPS_EMPTY), Catch::Contains("registers no step"));
  CHECK_THAT(load_error(FFCV_TEST_OPS_THROWS), Catch::Contains("planted registration failure"));
  CHECK_FALSE(OpRegistry::global().has_operation("fixture_before_throw"));

  // Replacing a built-in is refused, and nothing of that library is added.
  const auto before = OpRegistry::global().operations();
  CHECK_THAT(load_error(FFCV_TEST_OPS_DUPLICATE),
             Catch::Contains("operation 'random_horizontal_flip' is already registered"));
  CHECK(OpRegistry::global().operations() == before);
  CHECK_FALSE(OpRegistry::global().has_operation("fixture_beside_duplicate"));
  // A refused library is not remembered as loaded: the error comes again.
  CHECK_THAT(load_error(FFCV_TEST_OPS_DUPLICATE), Catch::Contains("already registered"));
}

TEST_CASE("registering a name twice is an error, not a replacement", "[op_library][errors]") {
  OpRegistry registry;
  CHECK(registry.empty());
  auto factory = [](const OpParams&) -> std::shared_ptr<Operation> { return nullptr; };
  registry.register_operation("a", "first", factory);
  CHECK_THROWS_WITH(registry.register_operation("a", "second", factory),
                    "operation 'a' is already registered");
  CHECK(registry.operations().front().second == "first");
  // add_all adds everything or nothing.
  OpRegistry more;
  more.register_operation("b", "new", factory);
  more.register_operation("a", "clash", factory);
  CHECK_THROWS_WITH(registry.add_all(more), "operation 'a' is already registered");
  CHECK_FALSE(registry.has_operation("b"));
  CHECK_NOTHROW(registry.register_decoder("a", "kinds have their own names", nullptr));
  OpRegistry fresh;
  fresh.register_operation("c", "new", factory);
  registry.add_all(fresh);
  CHECK(registry.has_operation("c"));
}

TEST_CASE("the op flag parses a name and typed parameters", "[op_library][cli]") {
  const OpSpec plain = parse_op_spec("swap_channels");
  CHECK(plain.name == "swap_channels");
  const OpSpec full = parse_op_spec("step:order=[2,1,0],p=0.25,n=3,on=true,dtype=float16");
  CHECK(full.name == "step");
  CHECK(full.params.get_list("order", {}) == std::vector<double>{2, 1, 0});
  CHECK(full.params.get_double("p", 0) == 0.25);
  CHECK(full.params.get_int("n", 0) == 3);
  CHECK(full.params.get_bool("on", false));
  CHECK(full.params.get_string("dtype", "") == "float16");
  CHECK(parse_op_spec("step:l=[1, 2.5]").params.get_list("l", {}) == std::vector<double>{1, 2.5});
  CHECK_THROWS_WITH(parse_op_spec("step:order"), Catch::Contains("not key=value"));
  CHECK_THROWS_WITH(parse_op_spec("step:a=1,a=2"), Catch::Contains("given twice"));
  CHECK_THROWS_WITH(parse_op_spec("step:l=[1,x]"), Catch::Contains("not a number"));
}

TEST_CASE("ffcv bench loads an op library and runs --op", "[op_library][cli]") {
  TempDir dir;
  const std::string path = write_images(dir);
  std::string out;
  const std::string library = std::string(" --op-library ") + FFCV_EXAMPLE_OPS_PATH;
  REQUIRE(test::run_cli("bench " + path + " --batch-size 8 --epochs 1" + library +
                            " --op swap_channels:order=[2,0,1] --json",
                        out) == 0);
  CHECK_THAT(out, Catch::Contains("\"samples\": 40"));
  CHECK(test::run_cli("bench " + path + library + " --op swap_channels:order=[0,1]", out) == 1);
  CHECK_THAT(out, Catch::Contains("swap_channels with 2 channels"));
  CHECK(test::run_cli("bench " + path + " --op-library " + dir.file("absent.so"), out) == 1);
  CHECK_THAT(out, Catch::Contains("no such file"));
}
