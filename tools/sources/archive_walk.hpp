// Walking the members of tar archives in their stored order, with libarchive: plain, gzip,
// bzip2, xz or zstd compressed; a member that is itself a tar (ImageNet's training tar holds one
// tar per class) is walked in place, without extracting it. One pass in order, in constant
// memory: a member's data is read only when the visitor asks for it, and in a plain
// (uncompressed) tar file the data nobody reads is seeked over, nested tars' too (they are read
// by position from the file), so a walk that reads no data reads only headers.
//
// Built only where libarchive was found (FFCV_HAVE_LIBARCHIVE); archives_supported() says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ffcv::tools {

// What a member is. Directories are not visited.
enum class MemberKind {
  kFile,      // a regular file: its data can be read
  kHardLink,  // a hard link: no data of its own; `link_target` names the member it shares
  kOther,     // a symbolic link, device, FIFO or socket: no data; `kind_name` says which
};

// One member other than a directory, in stream order.
struct ArchiveMember {
  std::string path;    // as stored ("n01440764/n01440764_10026.JPEG"); in a nested tar,
                       // "OUTER/INNER" ("n01440764.tar/n01440764_10026.JPEG")
  std::string folder;  // the class it belongs to: its parent folder, or a nested tar's stem
  std::uint64_t size = 0;
  std::size_t archive = 0;  // which of the walked archives holds it
  MemberKind kind = MemberKind::kFile;
  std::string link_target;  // kHardLink: the linked member's path, written as `path` is
  std::string kind_name;    // "regular file", "hard link", "symbolic link", "device", ...
};

// Throws ConfigError naming the member `where` and both sizes when its `size` (from its header)
// is over `max_bytes`: a damaged or hostile header must not make a reader hold gigabytes.
void check_member_size(const std::string& where, std::uint64_t size, std::uint64_t max_bytes);

// Reads the data of the member being visited (at most once); not reading it skips it. A member
// larger than `max_bytes` is refused (check_member_size) before any of it is read.
class MemberData {
 public:
  virtual ~MemberData() = default;
  virtual std::vector<std::uint8_t> read(std::uint64_t max_bytes) = 0;
};

using MemberVisitor = std::function<void(const ArchiveMember& member, MemberData& data)>;

// The length of `name`'s tar suffix (".tar", ".tar.gz" or ".tgz"), 0 for any other name: the
// names walk_archives opens as nested tars and a folder of shards holds.
std::size_t tar_suffix_length(const std::string& name);

// Whether this build reads archives; else walk_archives throws ConfigError naming libarchive.
bool archives_supported();

// Visits every member of `archives` but directories, in order (nested tars' members in place of
// the tar; a hidden tar, hidden_path(), is visited as a file). Stops early when `stop` becomes
// true. Throws IoError naming the archive and the member for a truncated or damaged archive,
// ConfigError for a file that is no archive.
void walk_archives(const std::vector<std::string>& archives, const MemberVisitor& visit,
                   const std::atomic<bool>* stop = nullptr);

// Reads a compressed archive's stream to its end and checks it whole: gzip's CRC-32 and length
// of every member (which libarchive does not check, and a walk that stops at the tar's end
// marker never reaches), and whatever check bzip2, xz or zstd carry. Does nothing for a plain
// tar. Throws IoError naming the archive when the stream is damaged or ends early.
void check_compressed_stream(const std::string& archive);

}  // namespace ffcv::tools
