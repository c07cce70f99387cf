// AtomicFile: a file written under a temporary name beside its destination and renamed onto it
// only when complete, so that readers see either the previous file or the whole new one.
//
// Every program of the project that replaces a file (the dataset writer, checkpoints, run logs,
// generated images) writes through this class, so that one set of rules holds everywhere:
//
//  - The temporary is "<dir>/.<name>.tmp-XXXXXX", created with mode 0644, and the writer holds
//    an exclusive flock() on it for its whole life. The lock is how a later writer tells a live
//    temporary from one whose process died: the kernel drops it with the process, even after
//    SIGKILL. Creating an AtomicFile for a destination first removes that destination's
//    temporaries whose lock is free (stale ones); temporaries of live writers are left alone.
//  - On SIGINT, SIGTERM and SIGHUP the temporaries of the process are removed and the signal's
//    default action then ends the process (a shell reports 130, 143 and 129). The handler is
//    installed, once, only for signals whose disposition is still the default: a program with a
//    handler of its own (the trainer stops cleanly on SIGINT/SIGTERM) keeps it, and its
//    destructors remove the temporaries. See interrupt_cleanup.hpp.
//  - commit() flushes the data to disk, renames the temporary onto the destination and flushes
//    the directory, so that after a crash the destination is the old or the new file, whole.
//
// Thread safety: one AtomicFile is used by one thread at a time (write_at() may be called from
// several threads for disjoint ranges, as pwrite allows). Errors are IoError naming the
// destination and the failed action.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ffcv {

class AtomicFile {
 public:
  // Creates the temporary beside `final_path` after removing stale ones. Throws IoError when
  // the directory cannot hold a new file, or ConfigError-like IoError (EISDIR) when
  // `final_path` names a directory.
  explicit AtomicFile(std::string final_path);
  // Removes the temporary unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& final_path() const { return final_path_; }
  // The temporary's path, for writers that open files by name. They must
  // write to it in place (truncate or overwrite), not replace it: the lock is on this inode.
  const std::string& temporary_path() const { return temp_path_; }

  // Writes all `size` bytes at absolute `offset`. Throws IoError.
  void write_at(std::uint64_t offset, const void* data, std::uint64_t size);

  // The alignment write_blocks_at needs of its offset, size and memory.
  static constexpr std::size_t kBlockAlignment = 4096;
  // The same for whole blocks (offset, size and `data` multiples of kBlockAlignment), written
  // past the page cache (O_DIRECT) where the file system allows it: a buffered write of a large
  // file costs a kernel copy and a cleared page per 4 KiB, which measured 2 s of CPU per 800 MiB
  // on a virtual disk (0.07 s direct), and it evicts what the machine had cached. Where O_DIRECT
  // is refused (tmpfs, some network file systems, a device with larger blocks) it writes as
  // write_at does. Throws IoError.
  void write_blocks_at(std::uint64_t offset, const void* data, std::uint64_t size);
  // Flushes to disk and renames onto the final path. Throws IoError.
  void commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  int direct_fd_ = -1;           // the temporary opened with O_DIRECT, on first use
  bool direct_refused_ = false;  // O_DIRECT is not available here: write_blocks_at buffers
  int cleanup_slot_ = -1;
  bool committed_ = false;
};

// Replaces `path` with `bytes` through an AtomicFile.
void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes);
void write_file_atomically(const std::string& path, std::string_view text);

// Six random characters of [A-Za-z0-9] for a temporary name, as mkstemp's XXXXXX.
std::string temporary_suffix();

// Removes the temporaries of `final_path` (".<name>.tmp-*" beside it) whose writer is gone.
// Returns how many were removed. AtomicFile's constructor calls it; exposed for tests and tools.
int remove_stale_temporaries(const std::string& final_path);

}  // namespace ffcv
