#include "staged_directory.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/interrupt_cleanup.hpp"

namespace ffcv::tools {
namespace fs = std::filesystem;
namespace {

std::string parent_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// A new hidden sibling "<parent>/.<name><infix>XXXXXX", locked by `lock_fd`. With a non-null
// `cleanup_slot`, the name is registered for removal on a signal before the folder exists.
std::string make_locked_sibling(const fs::path& destination, const std::string& infix, int& lock_fd,
                                int* cleanup_slot = nullptr) {
  const std::string prefix =
      parent_of(destination) + "/." + destination.filename().string() + infix;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::string candidate = prefix + temporary_suffix();
    const int slot = cleanup_slot ? register_cleanup_path(candidate, /*tree=*/true) : -1;
    if (::mkdir(candidate.c_str(), 0755) != 0) {
      const int error = errno;
      unregister_cleanup_path(slot);
      if (error == EEXIST) continue;
      throw IoError(destination.string(), "create a folder beside", error);
    }
    lock_fd = ::open(candidate.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0) {
      const int error = errno;
      unregister_cleanup_path(slot);
      ::rmdir(candidate.c_str());
      throw IoError(candidate, "lock", error);
    }
    if (cleanup_slot) *cleanup_slot = slot;
    return candidate;
  }
  throw IoError(destination.string(), "find a free name beside", EEXIST);
}

void remove_stale_siblings(const fs::path& destination) {
  const std::string name = destination.filename().string();
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(parent_of(destination), error)) {
    const std::string other = entry.path().filename().string();
    const bool ours =
        other.starts_with("." + name + ".partial-") || other.starts_with("." + name + ".old-");
    if (!ours || !entry.is_directory(error)) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) remove_tree_signal_safe(entry.path().c_str());
    ::close(fd);
  }
}

}  // namespace

StagedDirectory::StagedDirectory(std::string destination, std::string marker, bool replace_any)
    : destination_(std::move(destination)), marker_(std::move(marker)) {
  std::error_code error;
  const fs::path target(destination_);
  if (target.filename().empty()) {
    throw ConfigError("'" + destination_ + "': name the folder without a trailing '/'");
  }
  if (fs::exists(target, error)) {
    if (!fs::is_directory(target, error)) {
      throw ConfigError("'" + destination_ + "' exists and is not a folder");
    }
    const bool empty = fs::is_empty(target, error);
    const bool made_by_us = fs::exists(target / marker_, error);
    if (!empty && !made_by_us && !replace_any) {
      throw ConfigError("'" + destination_ + "' is a folder that this program did not make (no " +
                        marker_ +
                        " in it); it would be replaced: choose another folder, or "
                        "pass --force to replace it");
    }
  }
  fs::create_directories(parent_of(target), error);
  if (error) throw IoError(parent_of(target), "create the folder", error.value());
  remove_stale_siblings(target);
  stage_ = make_locked_sibling(target, ".partial-", lock_fd_, &cleanup_slot_);
}

StagedDirectory::~StagedDirectory() {
  if (!committed_) remove_tree_signal_safe(stage_.c_str());
  unregister_cleanup_path(cleanup_slot_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void StagedDirectory::commit(const std::string& marker_text) {
  write_file_atomically((fs::path(stage_) / marker_).string(), std::string_view(marker_text));
  const fs::path target(destination_);
  std::error_code error;
  std::string set_aside;
  if (fs::exists(target, error)) {
    // The old tree is renamed aside first and deleted after the new one is in place; an aside
    // left by a crash between the two renames is removed by the next run (it holds no lock).
    int aside_fd = -1;
    set_aside = make_locked_sibling(target, ".old-", aside_fd);
    ::close(aside_fd);
    ::rmdir(set_aside.c_str());
    if (::rename(destination_.c_str(), set_aside.c_str()) != 0) {
      throw IoError(destination_, "move the previous folder aside", errno);
    }
  }
  if (::rename(stage_.c_str(), destination_.c_str()) != 0) {
    const int rename_error = errno;
    if (!set_aside.empty()) ::rename(set_aside.c_str(), destination_.c_str());
    throw IoError(destination_, "rename the finished folder onto", rename_error);
  }
  committed_ = true;
  unregister_cleanup_path(cleanup_slot_);
  cleanup_slot_ = -1;
  if (!set_aside.empty()) remove_tree_signal_safe(set_aside.c_str());
}

}  // namespace ffcv::tools
