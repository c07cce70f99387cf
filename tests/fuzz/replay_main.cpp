// A main for the fuzz harnesses without libFuzzer: runs LLVMFuzzerTestOneInput on every file
// named, or in the folders named, once each, as CTest replays the seed corpora and the inputs of
// past findings (tests/fuzz/regressions) in every build. Prints how many inputs ran.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path path(argv[i]);
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
        if (!entry.is_regular_file()) continue;
        run_file(entry.path());
        ++inputs;
      }
    } else if (std::filesystem::exists(path)) {
      run_file(path);
      ++inputs;
    }
  }
  std::printf("%d inputs ran without a finding\n", inputs);
  return 0;
}
