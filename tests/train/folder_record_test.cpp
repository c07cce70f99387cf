// A results folder's lock (one process at a time, never stale after SIGKILL) and its record of
// what made it (a changed recipe key or data file is named; a copy of the same data is not a
// change).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/folder_provenance.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using namespace ffcv::train;
namespace fs = std::filesystem;

namespace {

// A two-field .beton of `samples` samples whose labels are `label_of(i)`.
void write_labels(const std::string& path, std::uint64_t samples, std::int64_t offset) {
  DatasetWriter(
      path, {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(samples, [offset](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(12, 10, i),
                                       static_cast<std::int64_t>(i) % 3 + offset};
      }));
}

}  // namespace

TEST_CASE("a folder lock refuses a second process, naming it, and dies with its holder",
          "[folder_lock]") {
  test::TempDir dir;
  const std::string folder = dir.file("run");
  CHECK(folder_lock_holder(folder) == 0);
  // The child takes the lock and keeps it until it is killed.
  const pid_t holder = test::child_holding([&] { new FolderLock(folder, "run folder"); });
  CHECK(folder_lock_holder(folder) == holder);
  try {
    const FolderLock second(folder, "run folder");
    FAIL("a second process took the lock");
  } catch (const FolderBusyError& error) {
    CHECK_THAT(error.what(), Catch::Contains("run folder " + folder) &&
                                 Catch::Contains("in use by process " + std::to_string(holder)));
  }
  // SIGKILL: the kernel drops the lock with the process; nothing stale is left behind.
  REQUIRE(::kill(holder, SIGKILL) == 0);
  REQUIRE(::waitpid(holder, nullptr, 0) == holder);
  CHECK(folder_lock_holder(folder) == 0);
  {
    const FolderLock mine(folder, "run folder");
    CHECK(mine.held());
    CHECK(folder_lock_holder(folder) == ::getpid());
    // The same process may lock it again (a command, then the trainer it calls).
    const FolderLock again(folder + "/", "run folder");
    CHECK(again.held());
  }
  CHECK(folder_lock_holder(folder) == 0);
}

TEST_CASE("a data file's identity follows its samples, not its name or write time",
          "[provenance]") {
  test::TempDir dir;
  write_labels(dir.file("a.beton"), 40, 0);
  const std::string identity = dataset_identity(dir.file("a.beton"));
  CHECK_THAT(identity, Catch::StartsWith(std::to_string(fs::file_size(dir.file("a.beton"))) +
                                         " bytes, tables "));
  // A copy, and the same samples written again: the same identity.
  fs::copy_file(dir.file("a.beton"), dir.file("copy.beton"));
  CHECK(dataset_identity(dir.file("copy.beton")) == identity);
  write_labels(dir.file("a.beton"), 40, 0);
  CHECK(dataset_identity(dir.file("a.beton")) == identity);
  // Other labels (the same sizes everywhere), or fewer samples: another identity.
  write_labels(dir.file("b.beton"), 40, 1);
  CHECK(fs::file_size(dir.file("b.beton")) == fs::file_size(dir.file("a.beton")));
  CHECK(dataset_identity(dir.file("b.beton")) != identity);
  write_labels(dir.file("c.beton"), 39, 0);
  CHECK(dataset_identity(dir.file("c.beton")) != identity);
  CHECK_THROWS_AS(dataset_identity(dir.file("missing.beton")), Error);
}

TEST_CASE("a folder's record is written once and names what differs later", "[provenance]") {
  test::TempDir dir;
  const std::string folder = dir.file("grid");
  write_labels(dir.file("train.beton"), 30, 0);
  Recipe recipe;
  recipe.data.train = dir.file("train.beton");
  recipe.training.epochs = 2;
  const auto record_of = [&](const Recipe& r) {
    Provenance record;
    record.add_recipe(r, {"lr.lr"});
    record.add_dataset(r.data.train);
    record.add_dataset(dir.file("missing.beton"));  // unreadable: no entry
    return record;
  };
  CHECK_FALSE(has_provenance(folder));
  CHECK(check_provenance(folder, record_of(recipe)).empty());
  CHECK(has_provenance(folder));
  // The swept key, the logging folder and an unreadable file are no part of it.
  Recipe same = recipe;
  same.lr.lr = 9;
  same.logging.folder = dir.file("elsewhere");
  CHECK(check_provenance(folder, record_of(same)).empty());

  Recipe longer = recipe;
  longer.training.epochs = 3;
  std::vector<ProvenanceDifference> differences = check_provenance(folder, record_of(longer));
  REQUIRE(differences.size() == 1);
  CHECK(describe_differences(differences) == "training.epochs was 2 and is now 3");

  write_labels(dir.file("train.beton"), 31, 0);
  longer.data.seed = 5;
  differences = check_provenance(folder, record_of(longer));
  CHECK(differences.size() == 3);
  // In the recipe's order: the data section comes first.
  CHECK(describe_differences(differences) ==
        "data.seed was 0 and is now 5 (and 2 more differences)");
  differences = check_provenance(folder, record_of(recipe));
  REQUIRE(differences.size() == 1);
  CHECK_THAT(describe_differences(differences),
             Catch::StartsWith("the data file " + dir.file("train.beton") + " changed ("));

  // Set aside, never deleted.
  const std::string aside = move_folder_aside(folder);
  CHECK_THAT(aside, Catch::StartsWith(folder + "-before-"));
  CHECK(has_provenance(aside));
  CHECK_FALSE(fs::exists(folder));
}
