// Fuzz harness: any text as a training recipe (TOML), followed by `--set` overrides: the lines
// after a line "#--" are each given as SECTION.KEY=VALUE. A recipe may be refused with
// ffcv::ConfigError (the reader is strict: unknown keys, wrong types, values out of range); one
// that loads must write back to TOML that loads to the same TOML (a finding otherwise, as is a
// crash or another exception type).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "ffcv/train/recipe.hpp"
#include "ffcv/util/errors.hpp"
#include "fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One file for both reads: the written text names the file it was read from.
  static ffcv::fuzz::FuzzInputFile file("fuzz-recipe");
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = input.find("\n#--\n");
  const std::string toml = input.substr(0, cut);
  std::vector<std::string> overrides;
  if (cut != std::string::npos) {
    std::istringstream lines(input.substr(cut + 5));
    for (std::string line; std::getline(lines, line);) overrides.push_back(line);
  }
  std::string written;
  try {
    const auto& path = file.hold(reinterpret_cast<const std::uint8_t*>(toml.data()), toml.size());
    written = ffcv::train::recipe_to_toml(ffcv::train::load_recipe(path, overrides));
  } catch (const ffcv::Error&) {
    return 0;
  }
  const auto& path =
      file.hold(reinterpret_cast<const std::uint8_t*>(written.data()), written.size());
  const std::string rewritten = ffcv::train::recipe_to_toml(ffcv::train::load_recipe(path));
  if (rewritten != written) {
    std::fprintf(stderr, "written:\n%s\nloaded and written again:\n%s\n", written.c_str(),
                 rewritten.c_str());
    std::abort();
  }
  return 0;
}
