#include "ffcv/util/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <vector>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/interrupt_cleanup.hpp"

namespace ffcv {
namespace {

struct PathParts {
  std::string dir;
  std::string name;
};

PathParts split_path(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

std::string temporary_prefix(const std::string& name) { return "." + name + ".tmp-"; }

bool same_inode(int fd, const std::string& path) {
  struct stat by_fd {
  }, by_path{};
  return ::fstat(fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 &&
         by_fd.st_ino == by_path.st_ino && by_fd.st_dev == by_path.st_dev;
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the rename happened; durability of the entry is best effort here
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string temporary_suffix() {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 generator(std::random_device{}() ^
                                         (std::uint64_t(::getpid()) << 32));
  std::string suffix(6, 'x');
  for (char& c : suffix) c = kAlphabet[generator() % (sizeof kAlphabet - 1)];
  return suffix;
}

int remove_stale_temporaries(const std::string& final_path) {
  const PathParts parts = split_path(final_path);
  const std::string prefix = temporary_prefix(parts.name);
  DIR* dir = ::opendir(parts.dir.c_str());
  if (dir == nullptr) return 0;
  std::vector<std::string> candidates;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    // mkstemp's six characters follow the prefix.
    if (name.size() == prefix.size() + 6 && name.starts_with(prefix)) candidates.push_back(name);
  }
  ::closedir(dir);
  int removed = 0;
  for (const std::string& name : candidates) {
    const std::string path = parts.dir + "/" + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    // A live writer holds the lock; a dead one's lock went with its process.
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && same_inode(fd, path) &&
        ::unlink(path.c_str()) == 0) {
      ++removed;
    }
    ::close(fd);
  }
  return removed;
}

AtomicFile::AtomicFile(std::string final_path) : final_path_(std::move(final_path)) {
  const PathParts parts = split_path(final_path_);
  if (parts.name.empty() || parts.name == "." || parts.name == "..") {
    throw IoError(final_path_, "write (the path names a directory)", EISDIR);
  }
  struct stat info {};
  if (::stat(final_path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw IoError(final_path_, "write (it is a directory)", EISDIR);
  }
  remove_stale_temporaries(final_path_);
  const std::string prefix = parts.dir + "/" + temporary_prefix(parts.name);
  // The name is registered for removal on a signal before the file exists, so that no signal
  // can fall between the two. A cleaner in another process may remove a new temporary between
  // open() and flock(); the inode check after taking the lock catches that, and a fresh name is
  // tried, as after a name that was taken.
  for (int attempt = 0; attempt < 64 && fd_ < 0; ++attempt) {
    const std::string candidate = prefix + temporary_suffix();
    const int slot = register_cleanup_path(candidate);
    const int fd = ::open(candidate.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int error = errno;
      unregister_cleanup_path(slot);
      if (error == EEXIST) continue;
      throw IoError(final_path_, "create a file in '" + parts.dir + "'", error);
    }
    if (::flock(fd, LOCK_EX) == 0 && same_inode(fd, candidate)) {
      fd_ = fd;
      temp_path_ = candidate;
      cleanup_slot_ = slot;
    } else {
      unregister_cleanup_path(slot);
      ::close(fd);
    }
  }
  if (fd_ < 0) throw IoError(final_path_, "keep a temporary file in '" + parts.dir + "'", EAGAIN);
  ::fchmod(fd_, 0644);  // whatever the umask, as a finished dataset should be
}

AtomicFile::~AtomicFile() {
  if (!committed_) ::unlink(temp_path_.c_str());
  unregister_cleanup_path(cleanup_slot_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
}

void AtomicFile::write_at(std::uint64_t offset, const void* data, std::uint64_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const ssize_t written = ::pwrite(fd_, bytes, size, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      throw IoError(final_path_, "write", errno);
    }
    bytes += written;
    offset += static_cast<std::uint64_t>(written);
    size -= static_cast<std::uint64_t>(written);
  }
}

void AtomicFile::write_blocks_at(std::uint64_t offset, const void* data, std::uint64_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  if (!direct_refused_ && direct_fd_ < 0) {
    direct_fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    direct_refused_ = direct_fd_ < 0;
  }
  while (size > 0 && !direct_refused_) {
    const ssize_t written = ::pwrite(direct_fd_, bytes, size, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      // The alignment this device needs is not ours (or a short write left us unaligned):
      // the rest, and every later block, goes through the page cache.
      if (errno == EINVAL) {
        direct_refused_ = true;
        break;
      }
      throw IoError(final_path_, "write", errno);
    }
    bytes += written;
    offset += static_cast<std::uint64_t>(written);
    size -= static_cast<std::uint64_t>(written);
  }
  write_at(offset, bytes, size);
}

void AtomicFile::commit() {
  if (committed_) return;
  if (direct_fd_ >= 0) {
    ::close(direct_fd_);
    direct_fd_ = -1;
  }
  if (::fsync(fd_) != 0) throw IoError(final_path_, "flush to disk", errno);
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    throw IoError(final_path_, "rename the finished temporary file onto", errno);
  }
  committed_ = true;
  unregister_cleanup_path(cleanup_slot_);
  cleanup_slot_ = -1;
  sync_directory(split_path(final_path_).dir);
  // Closing last keeps the lock until the name is in place.
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw IoError(final_path_, "close", errno);
}

void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes) {
  AtomicFile file(path);
  file.write_at(0, bytes.data(), bytes.size());
  file.commit();
}

void write_file_atomically(const std::string& path, std::string_view text) {
  write_file_atomically(path, std::span<const std::uint8_t>(
                                  reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

}  // namespace ffcv
