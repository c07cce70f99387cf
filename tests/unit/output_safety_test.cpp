// Outputs that never destroy inputs and never leak temporaries: AtomicFile's stale-temporary
// and signal rules, StagedDirectory, and `ffcv write` refusing outputs that are its own inputs
// or files of another kind, then interrupted by each signal at several moments.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/interrupt_cleanup.hpp"
#include "sources/idx_source.hpp"
#include "sources/staged_directory.hpp"
#include "test_support.hpp"

using namespace ffcv;
namespace fs = std::filesystem;

namespace {

// Every regular file under `root` (relative path -> bytes), hidden ones included.
std::map<std::string, std::vector<std::uint8_t>> snapshot(const std::string& root) {
  std::map<std::string, std::vector<std::uint8_t>> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      files[fs::relative(entry.path(), root).string()] = test::read_file(entry.path().string());
    }
  }
  return files;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> temporaries_of(const std::string& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const std::string& other : names_in(dir)) {
    if (other.starts_with("." + name + ".tmp-")) found.push_back(other);
  }
  return found;
}

// A folder of class folders holding small JPEGs.
void make_image_folder(const std::string& root) {
  for (int c = 0; c < 2; ++c) {
    fs::create_directories(root + "/c0" + std::to_string(c));
    for (int i = 0; i < 3; ++i) {
      test::write_file(root + "/c0" + std::to_string(c) + "/0000" + std::to_string(i) + ".jpg",
                       encode_jpeg(test::gradient_image(24, 20, c * 10 + i), 90));
    }
  }
}

}  // namespace

TEST_CASE("AtomicFile replaces its destination whole or not at all", "[output]") {
  test::TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomically(path, std::string_view("old"));
  {
    AtomicFile file(path);
    CHECK(fs::path(file.temporary_path()).filename().string().starts_with(".out.bin.tmp-"));
    file.write_at(0, "new contents", 12);
    CHECK(temporaries_of(dir.path(), "out.bin").size() == 1);
    // Not committed: the destination keeps its old contents and the temporary goes.
  }
  CHECK(test::read_file(path) == std::vector<std::uint8_t>{'o', 'l', 'd'});
  CHECK(temporaries_of(dir.path(), "out.bin").empty());
  {
    AtomicFile file(path);
    file.write_at(0, "new", 3);
    file.commit();
  }
  CHECK(test::read_file(path) == std::vector<std::uint8_t>{'n', 'e', 'w'});
  CHECK(names_in(dir.path()) == std::vector<std::string>{"out.bin"});
  CHECK_THROWS_WITH(AtomicFile(dir.path()), Catch::Contains("directory"));
}

TEST_CASE("AtomicFile writes whole blocks past the page cache, or buffered where that is refused",
          "[output]") {
  // Blocks written with O_DIRECT beside buffered writes before and after them, on the disk's
  // file system and (where the machine has one) on tmpfs, which refuses O_DIRECT.
  const std::size_t block = AtomicFile::kBlockAlignment;
  auto* aligned = static_cast<std::uint8_t*>(std::aligned_alloc(block, 4 * block));
  REQUIRE(aligned != nullptr);
  for (std::size_t i = 0; i < 4 * block; ++i) aligned[i] = static_cast<std::uint8_t>(i * 7 + 1);
  test::TempDir dir;
  std::vector<std::string> folders = {dir.path()};
  if (fs::is_directory("/dev/shm")) folders.push_back("/dev/shm");
  for (const std::string& folder : folders) {
    INFO(folder);
    const std::string path = folder + "/blocks-" + temporary_suffix() + ".bin";
    {
      AtomicFile file(path);
      file.write_at(0, "head", 4);
      file.write_blocks_at(block, aligned, 2 * block);
      file.write_blocks_at(3 * block, aligned + 2 * block, 2 * block);
      file.write_at(5 * block, "tail", 4);
      file.commit();
    }
    const std::vector<std::uint8_t> bytes = test::read_file(path);
    fs::remove(path);
    REQUIRE(bytes.size() == 5 * block + 4);
    CHECK(std::equal(bytes.begin() + block, bytes.begin() + 5 * block, aligned));
    CHECK(std::string(bytes.begin(), bytes.begin() + 4) == "head");
    CHECK(std::string(bytes.end() - 4, bytes.end()) == "tail");
  }
  std::free(aligned);
}

TEST_CASE("a writer's temporary outlives it only until the next writer of that file", "[output]") {
  test::TempDir dir;
  const std::string path = dir.file("data.beton");
  // A live writer, and one that died without cleaning up (as after SIGKILL)...
  const pid_t live = test::child_holding([&] { new AtomicFile(path); });
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) {
    auto* file = new AtomicFile(path);  // never destroyed
    file->write_at(0, "partial", 7);
    ::_exit(0);
  }
  test::wait_for_exit(dead);
  CHECK(temporaries_of(dir.path(), "data.beton").size() == 2);
  // ...only the dead one's temporary is stale.
  CHECK(remove_stale_temporaries(path) == 1);
  CHECK(temporaries_of(dir.path(), "data.beton").size() == 1);
  // Another file's temporaries are not touched.
  write_file_atomically(dir.file("data.beton.idx"), std::string_view("x"));
  ::kill(live, SIGKILL);
  test::wait_for_exit(live);
  // The next complete write removes the dead writer's temporary: one file is left.
  write_file_atomically(path, std::string_view("complete"));
  CHECK(names_in(dir.path()) == std::vector<std::string>{"data.beton", "data.beton.idx"});
}

TEST_CASE("SIGINT, SIGTERM and SIGHUP remove the temporaries and end the process", "[output]") {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    INFO("signal " << signal_number);
    test::TempDir dir;
    const std::string path = dir.file("out.beton");
    write_file_atomically(path, std::string_view("previous"));
    fs::create_directories(dir.file("tree-stage/c000"));
    test::write_file(dir.file("tree-stage/c000/a.jpg"), {1, 2, 3});
    const pid_t pid = test::child_holding([&] {
      // The test framework's own handlers are inherited; a program's start has the defaults.
      for (const int other : {SIGINT, SIGTERM, SIGHUP}) ::signal(other, SIG_DFL);
      install_interrupt_cleanup();
      auto* file = new AtomicFile(path);
      file->write_at(0, "partial", 7);
      register_cleanup_path(dir.file("tree-stage"), /*tree=*/true);
    });
    ::kill(pid, signal_number);
    const int status = test::wait_for_exit(pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal_number);
    CHECK(names_in(dir.path()) == std::vector<std::string>{"out.beton"});
    CHECK(test::read_file(path) ==
          std::vector<std::uint8_t>{'p', 'r', 'e', 'v', 'i', 'o', 'u', 's'});
  }
}

TEST_CASE("a staged folder replaces only a folder it made, and never leaves a half tree",
          "[output]") {
  test::TempDir dir;
  const std::string target = dir.file("images");
  {
    tools::StagedDirectory stage(target, ".made-by-test");
    test::write_file(stage.path() + "/one.jpg", {1});
    CHECK(!fs::exists(target));  // nothing under the final name until commit
    stage.commit("{}");
  }
  CHECK(fs::exists(target + "/one.jpg"));
  {
    tools::StagedDirectory stage(target, ".made-by-test");
    test::write_file(stage.path() + "/two.jpg", {2});
    // Not committed: the previous tree stays as it was.
  }
  CHECK(fs::exists(target + "/one.jpg"));
  CHECK(!fs::exists(target + "/two.jpg"));
  CHECK(names_in(dir.path()) == std::vector<std::string>{"images"});
  {
    tools::StagedDirectory stage(target, ".made-by-test");
    test::write_file(stage.path() + "/two.jpg", {2});
    stage.commit("{}");
  }
  CHECK(!fs::exists(target + "/one.jpg"));
  CHECK(fs::exists(target + "/two.jpg"));

  // A user's own folder is refused, before anything is made, unless replacing it is asked for.
  make_image_folder(dir.file("mine"));
  const auto before = snapshot(dir.file("mine"));
  CHECK_THROWS_WITH(tools::StagedDirectory(dir.file("mine"), ".made-by-test"),
                    Catch::Contains("did not make") && Catch::Contains("--force"));
  CHECK(snapshot(dir.file("mine")) == before);

  // A stage whose process died (SIGKILL) is removed by the next one.
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) {
    auto* stage = new tools::StagedDirectory(target, ".made-by-test");
    test::write_file(stage->path() + "/half.jpg", {3});
    ::_exit(0);
  }
  test::wait_for_exit(dead);
  CHECK(names_in(dir.path()).size() == 3);  // images, mine and the dead stage
  { tools::StagedDirectory stage(target, ".made-by-test"); }
  CHECK(names_in(dir.path()) == std::vector<std::string>{"images", "mine"});
}

TEST_CASE("ffcv write refuses an output that is one of its inputs or another kind of file",
          "[output][cli]") {
  test::TempDir dir;
  const std::string images = dir.file("images");
  make_image_folder(images);
  const auto inputs = snapshot(images);
  std::string out;
  // Inside a class folder (onto an image, or beside them), or the folder itself.
  for (const std::string& output :
       {images + "/c00/00000.jpg", images + "/c01/new.beton", images + "/c00", images}) {
    INFO(output);
    CHECK(test::run_cli("write folder " + images + " --output " + output, out) == 2);
    CHECK_THAT(out, Catch::Contains(output));
    CHECK(snapshot(images) == inputs);
  }
  // At the folder's top level nothing is read as input: allowed.
  CHECK(test::run_cli("write folder " + images + " --output " + images + "/all.beton --quiet",
                      out) == 0);
  fs::remove(images + "/all.beton");
  CHECK(fs::remove(images + "/all.beton.sources.json"));  // the class map beside it
  CHECK(snapshot(images) == inputs);

  // An existing file that is not a .beton needs --force; a .beton is replaced as before, and so
  // is an empty file (made by mktemp to hold the output).
  test::write_file(dir.file("notes.txt"), {'k', 'e', 'e', 'p'});
  CHECK(test::run_cli("write folder " + images + " --output " + dir.file("notes.txt"), out) == 2);
  CHECK_THAT(out, Catch::Contains("not a .beton") && Catch::Contains("--force"));
  CHECK(test::read_file(dir.file("notes.txt")) == std::vector<std::uint8_t>{'k', 'e', 'e', 'p'});
  CHECK(test::run_cli("write folder " + images + " --output " + dir.file("a.beton") + " --quiet",
                      out) == 0);
  CHECK(test::run_cli("write folder " + images + " --output " + dir.file("a.beton") + " --quiet",
                      out) == 0);
  test::write_file(dir.file("empty"), {});
  CHECK(test::run_cli("write folder " + images + " --output " + dir.file("empty") + " --quiet",
                      out) == 0);
  CHECK(test::read_file(dir.file("empty")) == test::read_file(dir.file("a.beton")));
  CHECK(test::run_cli(
            "write folder " + images + " --output " + dir.file("notes.txt") + " --force --quiet",
            out) == 0);
  CHECK(test::read_file(dir.file("notes.txt")) == test::read_file(dir.file("a.beton")));

  // npy: neither --features nor --targets may be the output (also through another spelling).
  test::write_file(dir.file("x.npy"), {1, 2, 3, 4});
  test::write_file(dir.file("y.npy"), {5, 6, 7, 8});
  const auto x = test::read_file(dir.file("x.npy"));
  const auto y = test::read_file(dir.file("y.npy"));
  for (const std::string& output : {dir.file("x.npy"), dir.path() + "/./y.npy"}) {
    CHECK(test::run_cli("write npy --features " + dir.file("x.npy") + " --targets " +
                            dir.file("y.npy") + " --output " + output + " --force",
                        out) == 2);
    CHECK_THAT(out, Catch::Contains("is one of the inputs"));
  }
  CHECK(test::read_file(dir.file("x.npy")) == x);
  CHECK(test::read_file(dir.file("y.npy")) == y);

  // imagenet-like: the output inside the tree it replaces, or a user's folder as the tree.
  CHECK(test::run_cli("write imagenet-like --count 4 --images-dir " + images + " --output " +
                          images + "/x.beton",
                      out) == 2);
  CHECK(snapshot(images) == inputs);
  const int status = test::run_cli(
      "write imagenet-like --count 4 --images-dir " + images + " --output " + dir.file("i.beton"),
      out);
  CHECK(status != 0);
  CHECK_THAT(out, Catch::Contains("did not make"));
  CHECK(snapshot(images) == inputs);
}

TEST_CASE("ffcv inspect --export replaces only an image, never the dataset", "[output][cli]") {
  test::TempDir dir;
  make_image_folder(dir.file("images"));
  // A .beton under an image name, so that only the input rule can stop the export onto it.
  const std::string dataset = dir.file("data.png");
  std::string out;
  REQUIRE(test::run_cli("write folder " + dir.file("images") + " --quiet --output " + dataset,
                        out) == 0);
  const auto before = test::read_file(dataset);
  CHECK(test::run_cli("inspect " + dataset + " --export 0 " + dataset, out) == 2);
  CHECK_THAT(out, Catch::Contains("is one of the inputs"));
  CHECK(test::run_cli("inspect " + dataset + " --export 0 " + dir.path() + "/./data.png --force",
                      out) == 2);
  CHECK(test::read_file(dataset) == before);
  test::write_file(dir.file("notes.png"), {'k', 'e', 'e', 'p'});
  CHECK(test::run_cli("inspect " + dataset + " --export 0 " + dir.file("notes.png"), out) == 2);
  CHECK_THAT(out, Catch::Contains("not an image file") && Catch::Contains("--force"));
  CHECK(test::read_file(dir.file("notes.png")) == std::vector<std::uint8_t>{'k', 'e', 'e', 'p'});
}

TEST_CASE(
    "an interrupted ffcv write leaves the previous output and, after the next write, one "
    "file",
    "[output][cli]") {
  const std::string idx_dir = tools::kFashionMnistDir;
  REQUIRE(fs::exists(idx_dir + "/train-images-idx3-ubyte.gz"));  // tools/setup.sh installs it
  test::TempDir dir;
  const std::string output = dir.file("fm.beton");
  const std::string arguments =
      "write fashion-mnist --split train --write-mode jpg --workers 1 --quiet --output " + output;
  std::string out;
  REQUIRE(test::run_cli("write fashion-mnist --split test --quiet --output " + output, out) == 0);
  const auto previous = test::read_file(output);

  // Each signal at several moments after the temporary appeared (the write takes about a second
  // on one worker).
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGKILL}) {
    for (const int delay_ms : {0, 150, 400}) {
      INFO("signal " << signal_number << " after " << delay_ms << " ms");
      // Temporaries of writers killed before (SIGKILL) are not this writer's.
      const std::vector<std::string> before = temporaries_of(dir.path(), "fm.beton");
      const auto is_new = [&](const std::string& name) {
        return std::find(before.begin(), before.end(), name) == before.end();
      };
      const pid_t pid = test::start_cli(arguments);
      const auto start = std::chrono::steady_clock::now();
      for (;;) {
        const std::vector<std::string> now = temporaries_of(dir.path(), "fm.beton");
        if (std::any_of(now.begin(), now.end(), is_new) ||
            std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) {
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      REQUIRE(::waitpid(pid, nullptr, WNOHANG) == 0);  // still writing
      ::kill(pid, signal_number);
      const int status = test::wait_for_exit(pid);
      CHECK(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == signal_number);
      CHECK(test::read_file(output) == previous);
      if (signal_number != SIGKILL) {
        const std::vector<std::string> after = temporaries_of(dir.path(), "fm.beton");
        CHECK(std::none_of(after.begin(), after.end(), is_new));
      }
    }
  }
  // Each write removed the temporary of the writer killed before it; the last one's is still
  // there, and the next complete write removes it.
  CHECK(temporaries_of(dir.path(), "fm.beton").size() == 1);
  REQUIRE(test::run_cli("write fashion-mnist --split test --quiet --output " + output, out) == 0);
  CHECK(names_in(dir.path()) == std::vector<std::string>{"fm.beton"});
  CHECK(test::read_file(output) == previous);
}

TEST_CASE("an interrupted imagenet-like generation leaves no tree under its name",
          "[output][cli]") {
  test::TempDir dir;
  const std::string images = dir.file("jpegs");
  const std::string arguments =
      "write imagenet-like --count 20000 --workers 1 --quiet --images-dir " + images +
      " --output " + dir.file("i.beton");
  const auto stages = [&] {
    std::vector<std::string> found;
    for (const std::string& name : names_in(dir.path())) {
      if (name.starts_with(".jpegs.partial-")) found.push_back(name);
    }
    return found;
  };
  for (const int signal_number : {SIGTERM, SIGKILL}) {
    INFO("signal " << signal_number);
    const pid_t pid = test::start_cli(arguments);
    // Wait until some images are in the stage (the photos load first).
    const auto start = std::chrono::steady_clock::now();
    bool images_written = false;
    while (!images_written && std::chrono::steady_clock::now() - start < std::chrono::seconds(60) &&
           ::waitpid(pid, nullptr, WNOHANG) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (const std::string& stage : stages()) {
        std::error_code error;
        for (fs::recursive_directory_iterator it(dir.file(stage), error), end;
             !error && it != end && !images_written; it.increment(error)) {
          images_written = it->path().extension() == ".jpg";
        }
      }
    }
    REQUIRE(images_written);  // needs the wallpaper packages tools/setup.sh installs
    ::kill(pid, signal_number);
    const int status = test::wait_for_exit(pid);
    CHECK(WIFSIGNALED(status));
    CHECK(!fs::exists(images));
    CHECK(!fs::exists(dir.file("i.beton")));
    CHECK(stages().size() == (signal_number == SIGKILL ? 1u : 0u));
  }
  // The next run removes the dead run's stage; it is refused before that only for a folder it
  // did not make, which a stage is not.
  std::string out;
  REQUIRE(test::run_cli("write imagenet-like --count 3 --classes 2 --quiet --images-dir " + images +
                            " --output " + dir.file("i.beton"),
                        out) == 0);
  CHECK(stages().empty());
  CHECK(fs::exists(images + "/.imagenet-like.json"));
}

namespace {

// The write that must fail: about 47 MB of raw 28x28 images over 2 MiB pages.
const std::string kBigWrite = "write fashion-mnist --split train --page-size 2M --quiet --output ";

// An output holding a complete earlier write (2000 samples of Fashion-MNIST's test split), for
// writes that must fail without touching it.
struct WrittenOutput {
  WrittenOutput() {
    REQUIRE(fs::exists(std::string(tools::kFashionMnistDir) + "/train-images-idx3-ubyte.gz"));
    std::string out;
    REQUIRE(test::run_cli(
                "write fashion-mnist --split test --subset 2000 --quiet --output " + output, out) ==
            0);
    previous = test::read_file(output);
  }

  // Runs kBigWrite with `before` ahead of it (shell text: a limit or variables), then checks:
  // exit status 1, one error line naming the output and `reason`, the previous output whole,
  // no temporary left.
  void check_write_fails(const std::string& before, const std::string& reason) const {
    std::string out;
    const int status = test::run_cli(kBigWrite + output, out, before);
    INFO(out);
    CHECK(status == 1);
    CHECK_THAT(out, Catch::Contains(output) && Catch::Contains(reason));
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    CHECK(test::read_file(output) == previous);
    CHECK(temporaries_of(dir.path(), "fm.beton").empty());
  }

  test::TempDir dir;
  std::string output = dir.file("fm.beton");
  std::vector<std::uint8_t> previous;
};

}  // namespace

TEST_CASE("a write past the file-size limit ends with one error and the old output whole",
          "[output][cli][faults]") {
  // RLIMIT_FSIZE of 4 MiB (8192 blocks of 512 bytes): the kernel refuses writes past it with
  // EFBIG (and SIGXFSZ, which the writer ignores rather than die of it).
  WrittenOutput().check_write_fails("ulimit -f 8192; ", "File too large");
}

TEST_CASE("a write that fills the disk ends with one error and the old output whole",
          "[output][cli][faults]") {
  const WrittenOutput written;
  for (const long long budget : {0LL, 1000LL, 3000000LL, 20000000LL}) {
    INFO("disk full after " << budget << " bytes");
    written.check_write_fails(
        std::string("LD_PRELOAD=") + FFCV_FAIL_WRITES_PRELOAD +
            " FFCV_FAULT_MATCH=.fm.beton.tmp- FFCV_FAULT_BYTES=" + std::to_string(budget) + " ",
        "No space left on device");
  }
}
