// The examples the docs give are checked as a user would follow them: every ablation spec in
// docs/tuning.md and experiments/ablations/ is accepted by `ffcv ablate --list` in its current
// spelling (no note that a key is now spelled otherwise).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace ffcv;

namespace {

// The ```toml blocks of a Markdown file that hold a [sweep] section.
std::vector<std::string> sweep_specs(const std::string& markdown_path) {
  std::ifstream in(markdown_path);
  std::vector<std::string> specs;
  std::string line, block;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```toml") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      if (block.find("[sweep]") != std::string::npos) specs.push_back(block);
    } else if (inside) {
      block += line + "\n";
    }
  }
  return specs;
}

}  // namespace

TEST_CASE("the ablation specs in the docs and experiments use current key names",
          "[docs][ablate]") {
  test::TempDir dir;
  std::vector<std::string> files;
  const std::vector<std::string> specs =
      sweep_specs(std::string(FFCV_SOURCE_DIR) + "/docs/tuning.md");
  REQUIRE(specs.size() >= 2);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    files.push_back(dir.file("tuning-" + std::to_string(i) + ".toml"));
    std::ofstream(files.back()) << specs[i];
  }
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FFCV_SOURCE_DIR) +
                                                               "/experiments/ablations")) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path().string());
  }
  for (const std::string& file : files) {
    INFO(file);
    std::string out;
    CHECK(test::run_cli("ablate " + file + " --list --output " + dir.file("out"), out,
                        std::string("cd ") + FFCV_SOURCE_DIR + " && ") == 0);
    INFO(out);
    CHECK_THAT(out, !Catch::Contains("now spelled") && !Catch::Contains("note:"));
  }
}

TEST_CASE("the README and the recipes doc quote the main job's recorded run", "[docs]") {
  const std::string source = FFCV_SOURCE_DIR;
  const std::string result = test::text_of(source + "/results/main-job.md");
  const auto figure = result.find("**Result: ");
  REQUIRE(figure != std::string::npos);
  const std::string top1 = result.substr(figure + 10, result.find('%', figure) - figure - 9);
  REQUIRE(top1.size() >= 5);  // "91.44%"
  const auto took = result.find(" took ", figure);
  REQUIRE(took != std::string::npos);
  const std::string duration = result.substr(took + 6, result.find('.', took) - took - 6);
  for (const char* doc : {"/README.md", "/docs/recipes.md"}) {
    INFO(doc << ": " << top1 << ", " << duration);
    const std::string text = test::text_of(source + doc);
    CHECK_THAT(text, Catch::Contains(top1 + " test") && Catch::Contains(duration));
  }
}
