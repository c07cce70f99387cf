// Children die with their parent (common/spawn.hpp): `kill -9` of an ablation leaves none of its
// measurements running. (The grid's points: grid_run_test.cpp.)
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "process_scan.hpp"
#include "test_support.hpp"

using namespace ffcv;

TEST_CASE("kill -9 of an ablation leaves none of its children running", "[ablate][cli]") {
  test::TempDir dir;
  // Slow storage makes each measurement last about ten seconds: far longer than the check below
  // waits, so that a measurement left running would be seen.
  const std::string spec = dir.file("sweep.toml");
  std::ofstream(spec) << R"(
[dataset]
source = "imagenet-like"
count = 24
classes = 4

[bench]
batch_size = 8
epochs = 20
image_decoder = "random_resized_crop"
image_size = 32
process_cache = true
latency_ms = 150

[sweep]
workers = [1, 2]
)";
  const std::string out = dir.file("out");
  const pid_t pid =
      test::start_cli("ablate " + spec + " --output " + out + " --quiet", dir.file("ablate.log"));
  // A measurement of the ablation (`ffcv bench` on a file in the output folder) is running.
  const bool child_seen = test::wait_until(
      [&] { return !test::processes_naming("bench " + out).empty(); }, std::chrono::seconds(60));
  REQUIRE(child_seen);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  const int status = test::wait_for_exit(pid);
  CHECK(WIFSIGNALED(status));
  INFO(test::text_of(dir.file("ablate.log")));
  CHECK(test::wait_until([&] { return test::processes_naming(out).empty(); },
                         std::chrono::seconds(3)));
}
