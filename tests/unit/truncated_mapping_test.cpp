// A .beton truncated while the mmap reader uses it: one clear error, never SIGBUS.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

// About 24 MiB of raw 64x64 images over a dozen 2 MiB pages.
std::string raw_image_file(const test::TempDir& dir) {
  const std::string path = dir.file("raw.beton");
  DatasetWriter(
      path, {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}},
      {.page_size = 1u << 21})
      .write(test::FunctionSource(2000, [](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(64, 64, i),
                                       static_cast<std::int64_t>(i % 10)};
      }));
  return path;
}

}  // namespace

TEST_CASE("a file truncated under the mmap loader stops it with one error naming the file",
          "[loader][truncated]") {
  test::TempDir dir;
  const std::string path = raw_image_file(dir);
  LoaderOptions options;
  options.batch_size = 50;
  options.num_workers = 2;
  Loader loader(path, {}, options);
  auto epoch = loader.epoch(0);
  REQUIRE(epoch.next().has_value());
  REQUIRE(::truncate(path.c_str(), 4 << 20) == 0);
  std::string message;
  std::uint64_t batches = 1;
  try {
    while (epoch.next()) ++batches;
  } catch (const Error& error) {
    message = error.what();
  }
  INFO("after " << batches << " batches");
  CHECK(batches < loader.batches_per_epoch());
  CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("shrank to 4194304 bytes"));
  // A new epoch of the same loader reports it too, before handing out anything read as zeros.
  auto again = loader.epoch(1);
  CHECK_THROWS_WITH(
      [&] {
        while (again.next()) {
        }
      }(),
      Catch::Contains("shrank"));
}

TEST_CASE("ffcv bench on a file truncated while it runs exits 1 with one line",
          "[cli][truncated]") {
  test::TempDir dir;
  const std::string path = raw_image_file(dir);
  const std::string log = dir.file("bench.log");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string command = "exec " + std::string(FFCV_CLI_PATH) + " bench " + path +
                                " --batch-size 50 --num-workers 2 --epochs 100000 --json > " + log +
                                " 2>&1";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Truncate once the loader has the file mapped (and a little after, so epochs are running):
  // a fixed wait could cut the file before a slow start (a sanitizer build, a busy machine) has
  // even opened it, which is the open's error, not this test's.
  const std::string maps = "/proc/" + std::to_string(pid) + "/maps";
  for (int waited = 0; waited < 60000; waited += 20) {
    const std::string mapped = test::text_of(maps);
    if (mapped.find(path) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  REQUIRE(::waitpid(pid, nullptr, WNOHANG) == 0);  // still loading epochs
  REQUIRE(::truncate(path.c_str(), 4 << 20) == 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto bytes = test::read_file(log);
  const std::string output(bytes.begin(), bytes.end());
  INFO(output);
  REQUIRE(WIFEXITED(status));  // not killed by SIGBUS (exit 135 from a shell)
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(std::count(output.begin(), output.end(), '\n') == 1);
  CHECK_THAT(output, Catch::StartsWith("ffcv bench: error: ") && Catch::Contains(path) &&
                         Catch::Contains("shrank"));
}
