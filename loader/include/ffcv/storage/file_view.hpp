// FileView: the bytes of a whole .beton file, as the Reader sees them, wherever the file is.
//
//   a local path  the file memory-mapped (MappedFile): every byte is there, the OS page cache
//                 does the reading.
//   a URL         a sparse image: an address range as large as the file is reserved (no memory
//                 is committed), and each range asked for is fetched once with HTTP range
//                 requests (range_reader.hpp) into its place, in 1 MiB chunks, and kept. The
//                 Reader asks for the header, the field descriptors, the metadata table and the
//                 allocation table, so opening a remote file costs those bytes, not the file;
//                 a payload is fetched when asked for (inspect reads payloads; the loader reads
//                 them through its own page source instead).
//
// A span returned by bytes() stays valid, and its bytes unchanged, for the life of the view.
// bytes() is thread-safe; a remote fetch holds a lock, so concurrent first reads of a remote
// view are serialized.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ffcv/storage/range_reader.hpp"

namespace ffcv {

class FileView {
 public:
  // Throws IoError when the file or server cannot be reached (see open_range_reader).
  explicit FileView(const std::string& location, const HttpOptions& http = {});
  ~FileView();
  FileView(const FileView&) = delete;
  FileView& operator=(const FileView&) = delete;

  const std::string& location() const;
  std::uint64_t size() const;
  bool remote() const;

  // The bytes [offset, offset + size), which must lie in the file (callers check against size()
  // first). Throws IoError (or FormatError) when a remote range cannot be fetched.
  std::span<const std::uint8_t> bytes(std::uint64_t offset, std::uint64_t size) const;

  // Throws FormatError when the file changed since it was opened so that bytes() may have
  // returned something else than the file (see MappedFile::check_intact; a remote view checks
  // each response as it comes instead).
  void check_intact() const;

 private:
  class Local;
  class Remote;
  std::unique_ptr<Local> local_;
  std::unique_ptr<Remote> remote_;
};

}  // namespace ffcv
