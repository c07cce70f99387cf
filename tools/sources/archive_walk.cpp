#include "archive_walk.hpp"

#include <algorithm>
#include <string_view>

#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/errors.hpp"
#include "image_file.hpp"

#ifdef FFCV_HAVE_LIBARCHIVE
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#endif

namespace ffcv::tools {

void check_member_size(const std::string& where, std::uint64_t size, std::uint64_t max_bytes) {
  if (size <= max_bytes) return;
  throw ConfigError(where + ": a member of " + bytes_and_size_text(size) + ", over the " +
                    exact_byte_size_text(max_bytes) + " a member of its kind may hold");
}

std::size_t tar_suffix_length(const std::string& name) {
  for (const char* suffix : {".tar.gz", ".tgz", ".tar"}) {
    const std::string_view end(suffix);
    if (name.size() > end.size() && name.ends_with(end)) return end.size();
  }
  return 0;
}

#ifndef FFCV_HAVE_LIBARCHIVE

bool archives_supported() { return false; }

void walk_archives(const std::vector<std::string>&, const MemberVisitor&,
                   const std::atomic<bool>*) {
  throw ConfigError(
      "this build reads no archives: it was built without libarchive (install "
      "libarchive-dev and build again)");
}

void check_compressed_stream(const std::string&) {}

#else

namespace {

using ArchivePtr = std::unique_ptr<archive, decltype(&archive_read_free)>;

ArchivePtr new_reader() {
  ArchivePtr reader(archive_read_new(), &archive_read_free);
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_tar(reader.get());
  archive_read_support_format_gnutar(reader.get());
  return reader;
}

std::string stem_of_tar(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.size() - tar_suffix_length(name));
}

// The name of the folder holding `path`; "" at the top ("x.jpg", "./x.jpg").
std::string parent_folder(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "";
  const auto before = path.find_last_of('/', slash - 1);
  const std::size_t start = before == std::string::npos ? 0 : before + 1;
  const std::string folder = path.substr(start, slash - start);
  return folder == "." ? "" : folder;
}

// libarchive's message for the last error of `reader`; it gives none (a null pointer) for some
// failures, such as a compressed file cut short before its first block.
std::string error_text(archive* reader) {
  const char* text = archive_error_string(reader);
  return text != nullptr ? text : "the archive is damaged or truncated (no further detail)";
}

// What a member that is neither a directory nor a regular file is, in words.
std::string kind_name_of(archive_entry* entry) {
  if (archive_entry_hardlink(entry) != nullptr) return "hard link";
  switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
      return "regular file";
    case AE_IFLNK:
      return "symbolic link";
    case AE_IFCHR:
      return "character device";
    case AE_IFBLK:
      return "block device";
    case AE_IFIFO:
      return "FIFO";
    case AE_IFSOCK:
      return "socket";
    default:
      return "member of unknown type";
  }
}

// The data of the current entry of `reader`.
class EntryData final : public MemberData {
 public:
  EntryData(archive* reader, std::string where, std::uint64_t size)
      : reader_(reader), where_(std::move(where)), size_(size) {}
  std::vector<std::uint8_t> read(std::uint64_t max_bytes) override {
    check_member_size(where_, size_, max_bytes);
    std::vector<std::uint8_t> bytes(size_);
    std::uint64_t done = 0;
    while (done < size_) {
      const la_ssize_t got = archive_read_data(reader_, bytes.data() + done, size_ - done);
      if (got < 0) throw IoError(where_, "read", error_text(reader_));
      if (got == 0) throw IoError(where_, "read", "the archive ends inside this member");
      done += static_cast<std::uint64_t>(got);
    }
    return bytes;
  }

 private:
  archive* reader_;
  std::string where_;
  std::uint64_t size_;
};

// A nested tar read straight from its outer member's data.
struct NestedInput {
  archive* outer;
  std::vector<std::uint8_t> block = std::vector<std::uint8_t>(1 << 20);
};

la_ssize_t read_nested(archive*, void* input, const void** buffer) {
  auto* nested = static_cast<NestedInput*>(input);
  *buffer = nested->block.data();
  return archive_read_data(nested->outer, nested->block.data(), nested->block.size());
}

// A tar read by position from a plain (uncompressed) tar file: the whole file, or a nested tar
// inside it. Members' data that nobody reads is skipped by seeking, so listing ImageNet's
// training tar reads its headers, not its 140 GB.
struct NestedRange {
  int fd;
  std::uint64_t start, size;
  std::uint64_t at = 0;  // within the range
  std::vector<std::uint8_t> block = std::vector<std::uint8_t>(1 << 20);
  // Reads start small after a skip (a member's headers are a few KB) and double while they run
  // on (its data, when read), so skipped members cost their headers only.
  std::uint64_t next_read = kFirstRead;
  static constexpr std::uint64_t kFirstRead = 2048;
};

la_ssize_t read_range(archive* reader, void* input, const void** buffer) {
  auto* range = static_cast<NestedRange*>(input);
  *buffer = range->block.data();
  const std::uint64_t want =
      std::min<std::uint64_t>({range->next_read, range->block.size(), range->size - range->at});
  if (want == 0) return 0;
  range->next_read = std::min<std::uint64_t>(2 * range->next_read, range->block.size());
  const ssize_t got =
      ::pread(range->fd, range->block.data(), want, static_cast<off_t>(range->start + range->at));
  if (got < 0) {
    archive_set_error(reader, errno, "cannot read the tar");
    return ARCHIVE_FATAL;
  }
  if (got == 0) {
    archive_set_error(reader, EIO, "the archive ends inside the nested tar");
    return ARCHIVE_FATAL;
  }
  range->at += static_cast<std::uint64_t>(got);
  return got;
}

la_int64_t skip_range(archive*, void* input, la_int64_t request) {
  auto* range = static_cast<NestedRange*>(input);
  const std::uint64_t skipped =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(request), range->size - range->at);
  range->at += skipped;
  range->next_read = NestedRange::kFirstRead;
  return static_cast<la_int64_t>(skipped);
}

la_int64_t seek_range(archive*, void* input, la_int64_t offset, int whence) {
  auto* range = static_cast<NestedRange*>(input);
  const la_int64_t base = whence == SEEK_SET   ? 0
                          : whence == SEEK_CUR ? static_cast<la_int64_t>(range->at)
                                               : static_cast<la_int64_t>(range->size);
  const la_int64_t target = base + offset;
  if (target < 0 || static_cast<std::uint64_t>(target) > range->size) return ARCHIVE_FATAL;
  range->at = static_cast<std::uint64_t>(target);
  range->next_read = NestedRange::kFirstRead;
  return target;
}

// Opens `reader` on `range` (which must outlive it) through the callbacks above.
int open_by_position(archive* reader, NestedRange& range) {
  archive_read_set_callback_data(reader, &range);
  archive_read_set_read_callback(reader, &read_range);
  archive_read_set_skip_callback(reader, &skip_range);
  archive_read_set_seek_callback(reader, &seek_range);
  return archive_read_open1(reader);
}

// The open file of an archive being walked, for nested tars read by position; fd -1 when the
// archive is compressed (its bytes have no positions to seek to) or no regular file.
struct PlainFile {
  int fd = -1;
  ~PlainFile() {
    if (fd >= 0) ::close(fd);
  }
};

struct Walk {
  const MemberVisitor& visit;
  const std::atomic<bool>* stop;
  std::size_t archive_index = 0;
  int plain_fd = -1;  // the archive's file when it is a plain tar (PlainFile)

  bool stopped() const { return stop != nullptr && stop->load(); }

  // Visits the members of `reader` (opened); `prefix` and `folder` for a nested tar's members.
  void members(archive* reader, const std::string& name, const std::string& prefix,
               const std::string& nested_folder) {
    archive_entry* entry = nullptr;
    for (;;) {
      if (stopped()) return;
      const int status = archive_read_next_header(reader, &entry);
      if (status == ARCHIVE_EOF) return;
      if (status < ARCHIVE_WARN) {
        throw IoError(name, "read the archive",
                      error_text(reader) + " (after " + std::to_string(archive_file_count(reader)) +
                          " members)");
      }
      if (archive_entry_filetype(entry) == AE_IFDIR) continue;
      const std::string path = archive_entry_pathname(entry);
      const char* hard_link = archive_entry_hardlink(entry);
      const bool regular = hard_link == nullptr && archive_entry_filetype(entry) == AE_IFREG;
      const std::uint64_t size =
          regular ? static_cast<std::uint64_t>(archive_entry_size(entry)) : 0;
      if (regular && prefix.empty() && tar_suffix_length(path) > 0 && !hidden_path(path)) {
        if (!nested_by_position(reader, name, path, size)) nested(reader, name, path);
        continue;
      }
      ArchiveMember member;
      member.path = prefix + path;
      member.folder = nested_folder.empty() ? parent_folder(path) : nested_folder;
      member.size = size;
      member.archive = archive_index;
      member.kind = regular                ? MemberKind::kFile
                    : hard_link != nullptr ? MemberKind::kHardLink
                                           : MemberKind::kOther;
      if (hard_link != nullptr) member.link_target = prefix + hard_link;
      member.kind_name = kind_name_of(entry);
      EntryData data(reader, name + ": " + member.path, size);
      visit(member, data);
    }
  }

  // Walks the nested tar `path` (of `size` bytes) through the outer file by position, when the
  // outer archive is a plain tar file; returns false (having read nothing of it) otherwise, or
  // when the bytes there are no tar after all, for nested() to stream it instead.
  bool nested_by_position(archive* outer, const std::string& name, const std::string& path,
                          std::uint64_t size) {
    if (plain_fd < 0) return false;  // (a compressed nested tar is decompressed as it is read)
    // The format reader has consumed the member's headers and none of its data: the data starts
    // where the (only, "none") filter's consumed bytes end.
    const la_int64_t start = archive_filter_bytes(outer, 0);
    if (start < 0) return false;
    NestedRange range{plain_fd, static_cast<std::uint64_t>(start), size};
    ArchivePtr inner = new_reader();
    if (open_by_position(inner.get(), range) != ARCHIVE_OK) return false;
    members(inner.get(), name + ": " + path, path + "/", stem_of_tar(path));
    return true;
  }

  void nested(archive* outer, const std::string& name, const std::string& path) {
    NestedInput input{outer};
    ArchivePtr inner = new_reader();
    if (archive_read_open(inner.get(), &input, nullptr, &read_nested, nullptr) != ARCHIVE_OK) {
      throw IoError(name + ": " + path, "open the nested tar", error_text(inner.get()));
    }
    members(inner.get(), name + ": " + path, path + "/", stem_of_tar(path));
  }
};

}  // namespace

bool archives_supported() { return true; }

namespace {

ArchivePtr open_file(const std::string& path, std::size_t block_bytes) {
  ArchivePtr reader = new_reader();
  if (archive_read_open_filename(reader.get(), path.c_str(), block_bytes) != ARCHIVE_OK) {
    throw ConfigError(path + ": " + error_text(reader.get()));
  }
  return reader;
}

}  // namespace

void walk_archives(const std::vector<std::string>& archives, const MemberVisitor& visit,
                   const std::atomic<bool>* stop) {
  Walk walk{visit, stop};
  for (std::size_t i = 0; i < archives.size(); ++i) {
    walk.archive_index = i;
    // A small first read finds out whether the archive is a plain tar (then read by position)
    // or compressed (then streamed in blocks of 1 MiB).
    ArchivePtr reader = open_file(archives[i], 16 << 10);
    PlainFile plain;
    struct stat file {};
    std::optional<NestedRange> whole;
    if (archive_filter_count(reader.get()) == 1 &&
        archive_filter_code(reader.get(), 0) == ARCHIVE_FILTER_NONE) {
      plain.fd = ::open(archives[i].c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (plain.fd >= 0 && ::fstat(plain.fd, &file) == 0 && S_ISREG(file.st_mode)) {
      // By position: libarchive's own blocks would cost a whole block per member header (a GB
      // for ImageNet's 1,000 class tars in blocks of 1 MiB).
      whole.emplace(NestedRange{plain.fd, 0, static_cast<std::uint64_t>(file.st_size)});
      reader = new_reader();
      if (open_by_position(reader.get(), *whole) != ARCHIVE_OK) {
        throw ConfigError(archives[i] + ": " + error_text(reader.get()));
      }
    } else {
      reader = open_file(archives[i], 1 << 20);
    }
    walk.plain_fd = plain.fd;
    walk.members(reader.get(), archives[i], "", "");
    if (walk.stopped()) return;
  }
}

namespace {

// gzip: zlib checks each member's CRC-32 and length as it reaches the member's end; members
// follow one another to the end of the file (as `gzip -t` reads them).
void check_gzip_stream(const std::string& archive, int fd) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    throw IoError(archive, "check the gzip stream", "zlib cannot start");
  }
  std::unique_ptr<z_stream, decltype(&inflateEnd)> end_stream(&stream, &inflateEnd);
  std::vector<std::uint8_t> in(1 << 20), out(1 << 20);
  std::uint64_t offset = 0;
  bool inside_member = false, members_ended = false;
  for (;;) {
    const ssize_t got = ::read(fd, in.data(), in.size());
    if (got < 0) throw IoError(archive, "read", std::strerror(errno));
    if (got == 0) break;
    stream.next_in = in.data();
    stream.avail_in = static_cast<uInt>(got);
    while (stream.avail_in > 0) {
      if (members_ended && !inside_member && *stream.next_in == 0) {
        ++stream.next_in;  // zeros padding the file after its last member, as gzip -t allows
        --stream.avail_in;
        continue;
      }
      stream.next_out = out.data();
      stream.avail_out = static_cast<uInt>(out.size());
      const int status = inflate(&stream, Z_NO_FLUSH);
      inside_member = status != Z_STREAM_END;
      if (status == Z_STREAM_END) {
        members_ended = true;
        inflateReset(&stream);
      } else if (status != Z_OK && status != Z_BUF_ERROR) {
        throw IoError(
            archive, "check the gzip stream",
            std::string("damaged near compressed byte ") +
                std::to_string(offset + static_cast<std::uint64_t>(got) - stream.avail_in) + ": " +
                (stream.msg != nullptr ? stream.msg : "zlib error") + " (gzip -t says the same)");
      }
    }
    offset += static_cast<std::uint64_t>(got);
  }
  if (inside_member) {
    throw IoError(archive, "check the gzip stream",
                  "it ends inside a compressed member (the file is truncated)");
  }
}

// bzip2, xz, zstd, ...: libarchive's decompressors check what their formats carry; reading the
// whole stream as one raw entry runs every check to the end.
void check_by_libarchive(const std::string& archive) {
  ArchivePtr reader(archive_read_new(), &archive_read_free);
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_raw(reader.get());
  archive_entry* entry = nullptr;
  if (archive_read_open_filename(reader.get(), archive.c_str(), 1 << 20) != ARCHIVE_OK ||
      archive_read_next_header(reader.get(), &entry) != ARCHIVE_OK) {
    throw IoError(archive, "check the compressed stream", error_text(reader.get()));
  }
  std::vector<std::uint8_t> block(1 << 20);
  for (;;) {
    const la_ssize_t got = archive_read_data(reader.get(), block.data(), block.size());
    if (got == 0) return;
    if (got < 0) {
      throw IoError(archive, "check the compressed stream", error_text(reader.get()));
    }
  }
}

}  // namespace

void check_compressed_stream(const std::string& archive) {
  const int fd = ::open(archive.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(archive, "open", std::strerror(errno));
  PlainFile file{fd};
  std::uint8_t magic[2] = {};
  if (::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    check_gzip_stream(archive, fd);
    return;
  }
  ArchivePtr probe = open_file(archive, 16 << 10);
  const bool compressed = archive_filter_count(probe.get()) > 1 ||
                          archive_filter_code(probe.get(), 0) != ARCHIVE_FILTER_NONE;
  if (compressed) check_by_libarchive(archive);
}

#endif

}  // namespace ffcv::tools
