// Helpers shared by the unit tests: temporary directories, in-memory sample sources, files.
#pragma once

#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/whole_file.hpp"

namespace ffcv::test {

// The line that marks a test case as not run. Catch2 2 cannot skip a case, so every Catch test
// in CTest carries SKIP_REGULAR_EXPRESSION on this marker (tests/CMakeLists.txt) and shows as
// skipped, never as passed; a run by hand prints the reason.
inline constexpr const char* kSkipMarker = "[test not run]";

// The threads of this process (/proc/self/task).
inline std::size_t thread_count() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++count;
  }
  return count;
}

// The thread count once it is back to `expected`, or after `patience`. A thread that was just
// joined can stay listed for a moment while the kernel reaps it (longer under sanitizers), so a
// test that expects the count to return to where it was waits for it instead of racing it.
inline std::size_t thread_count_back_to(
    std::size_t expected, std::chrono::milliseconds patience = std::chrono::milliseconds(2000)) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::size_t count = thread_count();
  while (count != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    count = thread_count();
  }
  return count;
}

// Prints the marker and why; the caller then returns from its test case.
inline void skip_test(const std::string& reason) {
  std::printf("%s %s\n", kSkipMarker, reason.c_str());
  std::fflush(stdout);
}

// A fresh directory under $TMPDIR, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ffcv-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  // Removes the tree with nftw rather than std::filesystem::remove_all: LibTorch's shared
  // library exports its own copy of the latter, which crashes when interposed.
  ~TempDir() {
    ::chmod(path_.c_str(), 0700);
    ::nftw(
        path_.c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A SampleSource computed by a function of the index.
class FunctionSource final : public SampleSource {
 public:
  FunctionSource(std::uint64_t size, std::function<std::vector<FieldValue>(std::uint64_t)> make)
      : size_(size), make_(std::move(make)) {}
  std::uint64_t size() const override { return size_; }
  std::vector<FieldValue> load(std::uint64_t index) const override { return make_(index); }

 private:
  std::uint64_t size_;
  std::function<std::vector<FieldValue>(std::uint64_t)> make_;
};

// The whole file (empty when it cannot be read), in one read: a byte-by-byte stream iterator
// takes seconds for a dataset file in test code compiled at -O0 under the sanitizers.
inline std::vector<std::uint8_t> read_file(const std::string& path) {
  try {
    return read_whole_file(path);
  } catch (const Error&) {
    return {};
  }
}

// The whole file as text ("" when it cannot be read).
inline std::string text_of(const std::string& path) {
  const std::vector<std::uint8_t> bytes = read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// A smooth, index-dependent RGB test image (JPEG-friendly: gentle gradients, no edges).
inline RgbImage gradient_image(int width, int height, std::uint64_t seed) {
  RgbImage image{width, height,
                 std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
  const int offset = static_cast<int>(seed % 50);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = &image.pixels[(static_cast<std::size_t>(y) * width + x) * 3];
      p[0] = static_cast<std::uint8_t>(offset + x * 200 / std::max(1, width - 1));
      p[1] = static_cast<std::uint8_t>(offset + y * 200 / std::max(1, height - 1));
      p[2] = static_cast<std::uint8_t>(offset + (x + y) * 100 / std::max(1, width + height - 2));
    }
  }
  return image;
}

// Peak signal-to-noise ratio between two images of the same size, in dB.
inline double psnr(const RgbImage& a, const RgbImage& b) {
  double squared = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) {
    const double d = double(a.pixels[i]) - double(b.pixels[i]);
    squared += d * d;
  }
  const double mse = squared / static_cast<double>(a.pixels.size());
  return mse == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

// Overwrites the first two bytes (the JPEG start marker) of the stored JPEGs of `samples` in
// the RGBImage field `field` of the .beton at `path`: planted samples no decoder can read.
inline void break_jpeg_samples(const std::string& path,
                               std::initializer_list<std::uint64_t> samples,
                               std::size_t field = 0) {
  std::vector<std::uint8_t> bytes = read_file(path);
  {
    const Reader reader(path);
    for (const std::uint64_t sample : samples) {
      const std::uint64_t ptr = ImageMetadata::load(reader.column(sample, field)).data_ptr;
      bytes[ptr] = bytes[ptr + 1] = 0;
    }
  }
  write_file(path, bytes);
}

#ifdef FFCV_CLI_PATH
// Runs the ffcv CLI; returns its exit status and puts stdout+stderr in `output`. `before` is
// shell text put before the command: variables ("LD_PRELOAD=... ") or a limit ("ulimit -f 64; ").
inline int run_cli(const std::string& arguments, std::string& output,
                   const std::string& before = "") {
  const std::string command = before + std::string(FFCV_CLI_PATH) + " " + arguments + " 2>&1";
  output.clear();
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[4096];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts `ffcv ARGUMENTS` without waiting for it, as a program started from a terminal would be
// (SIGINT, SIGTERM and SIGHUP at their default actions); its output goes to `output_file`, or to
// this process's stdout and stderr when empty. Returns its pid, for signals and wait_for_exit.
inline pid_t start_cli(const std::string& arguments, const std::string& output_file = "") {
  std::string command = "exec " + std::string(FFCV_CLI_PATH) + " " + arguments;
  if (!output_file.empty()) command += " >'" + output_file + "' 2>&1";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    for (const int other : {SIGINT, SIGTERM, SIGHUP}) ::signal(other, SIG_DFL);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

#endif  // FFCV_CLI_PATH

// Runs `body` in a forked child that then reports on a pipe that it is ready and waits for a
// signal (what `body` took, a lock or an open file, stays held until the child is killed);
// returns the child's pid once it is ready. A `body` that throws ends the child with status 3,
// and the parent's check that it became ready fails.
inline pid_t child_holding(const std::function<void()>& body) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    try {
      body();
    } catch (...) {
      ::_exit(3);
    }
    const char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  return pid;
}

// Waits for child `pid` to end; returns its wait status (WIFEXITED, WTERMSIG...).
inline int wait_for_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace ffcv::test
