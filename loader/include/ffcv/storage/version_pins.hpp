// Version pins: the one version of each remote file that a whole command reads.
//
// A command may open the same URL several times (`ffcv run` checks the labels, then opens a
// loader for training and one for validation; `ffcv bench` opens it once per measurement), and
// the tables of one open (sample pointers, labels) are used with the pages of another. If the
// file were replaced on the server in between, those would come from two different files. So
// the first open of a URL in a process pins the version it saw (the size, the ETag and the
// Last-Modified date), every later open and every range request of that URL must match that pin
// (the requests carry it as If-Match, or If-Unmodified-Since when the server sends no ETag), and
// a mismatch is a FileChangedError (range_reader.hpp) naming both versions.
//
// Child processes (ranks, the points of a grid) read the pins their parent holds from the
// environment variable FFCV_HTTP_PINS, which every child the CLI starts is given
// (pinned_versions_environment()), so that they read the version their parent checked.
//
// Pins are keyed by the URL without its user name and password. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ffcv {

// What identifies one version of a remote file. Empty strings: the server sent no such header.
struct FileVersion {
  std::uint64_t size = 0;
  std::string etag;
  std::string last_modified;

  // "4718592 bytes, ETag "abc"" or "..., Last-Modified Tue, 01 Jan ..." for messages.
  std::string describe() const;

  bool operator==(const FileVersion&) const = default;
};

// The version pinned for `url`, if it was opened before in this process (or by the parent).
std::optional<FileVersion> pinned_version(const std::string& url);

// Pins `seen` for `url` unless a version is pinned already; returns the version in effect.
FileVersion pin_version(const std::string& url, const FileVersion& seen);

// Forgets every pin, so that the next open of each URL reads its current version: for long-lived
// processes (a notebook) that mean to follow a file that was replaced.
void forget_pinned_versions();

// "FFCV_HTTP_PINS=..." holding every pin, for a child's environment; empty when nothing is
// pinned.
std::string pinned_versions_environment();

inline constexpr const char* kPinsEnvironmentVariable = "FFCV_HTTP_PINS";

}  // namespace ffcv
