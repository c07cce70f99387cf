// Whether a file on disk is a .beton: what every writer (`ffcv write`, the Python package's
// DatasetWriter) asks before it replaces an existing output. A .beton may be replaced (it is
// what a rerun of the same write makes), and so may an empty file (nothing is lost: one made by
// `mktemp` or Python's `tempfile.NamedTemporaryFile()` to hold the output); any other file only
// when the caller says so (--force, force=True), so that a mistyped output path never destroys a
// file of another kind.
#pragma once

#include <optional>
#include <string>

#include "ffcv/format/format.hpp"

namespace ffcv {

// True when `path` starts with a .beton header (FFCV format version 2, at least one field) and
// is long enough to hold its field descriptors; a damaged or truncated .beton with an intact
// header counts. False for a file that cannot be read.
bool is_beton_file(const std::string& path);

// True when a writer may replace `path` without being told to: a .beton (is_beton_file) or an
// empty regular file.
bool replaceable_without_force(const std::string& path);

// The header of the .beton at `path` when it starts with one of FFCV format version 2; nullopt for
// a file that cannot be read or holds another version (for figures read without opening the
// whole file: a grid's plan reads its data files' sample counts here).
std::optional<Header> read_beton_header(const std::string& path);

}  // namespace ffcv
