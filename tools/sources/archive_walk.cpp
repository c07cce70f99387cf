#include "archive_walk.hpp"

#include <string_view>

#include "ffcv/util/errors.hpp"

#ifdef FFCV_HAVE_LIBARCHIVE
#include <archive.h>
#include <archive_entry.h>

#include <memory>
#endif

namespace ffcv::tools {

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

// The data of the current entry of `reader`.
class EntryData final : public MemberData {
 public:
  EntryData(archive* reader, std::string where, std::uint64_t size)
      : reader_(reader), where_(std::move(where)), size_(size) {}
  std::vector<std::uint8_t> read() override {
    std::vector<std::uint8_t> bytes(size_);
    std::uint64_t done = 0;
    while (done < size_) {
      const la_ssize_t got = archive_read_data(reader_, bytes.data() + done, size_ - done);
      if (got < 0) throw IoError(where_, "read", archive_error_string(reader_));
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

struct Walk {
  const MemberVisitor& visit;
  const std::atomic<bool>* stop;
  std::size_t archive_index = 0;

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
                      std::string(archive_error_string(reader)) + " (after " +
                          std::to_string(archive_file_count(reader)) + " members)");
      }
      if (archive_entry_filetype(entry) != AE_IFREG) continue;
      const std::string path = archive_entry_pathname(entry);
      const std::uint64_t size = static_cast<std::uint64_t>(archive_entry_size(entry));
      if (prefix.empty() && tar_suffix_length(path) > 0) {
        nested(reader, name, path);
        continue;
      }
      ArchiveMember member{prefix + path,
                           nested_folder.empty() ? parent_folder(path) : nested_folder, size,
                           archive_index};
      EntryData data(reader, name + ": " + member.path, size);
      visit(member, data);
    }
  }

  void nested(archive* outer, const std::string& name, const std::string& path) {
    NestedInput input{outer};
    ArchivePtr inner = new_reader();
    if (archive_read_open(inner.get(), &input, nullptr, &read_nested, nullptr) != ARCHIVE_OK) {
      throw IoError(name + ": " + path, "open the nested tar", archive_error_string(inner.get()));
    }
    members(inner.get(), name + ": " + path, path + "/", stem_of_tar(path));
  }
};

}  // namespace

bool archives_supported() { return true; }

void walk_archives(const std::vector<std::string>& archives, const MemberVisitor& visit,
                   const std::atomic<bool>* stop) {
  Walk walk{visit, stop};
  for (std::size_t i = 0; i < archives.size(); ++i) {
    walk.archive_index = i;
    ArchivePtr reader = new_reader();
    if (archive_read_open_filename(reader.get(), archives[i].c_str(), 1 << 20) != ARCHIVE_OK) {
      throw ConfigError(archives[i] + ": " + archive_error_string(reader.get()));
    }
    walk.members(reader.get(), archives[i], "", "");
    if (walk.stopped()) return;
  }
}

#endif

}  // namespace ffcv::tools
