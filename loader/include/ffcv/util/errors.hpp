// The error types of the loader library.
//
// Every failure a user can cause (a corrupt file, a bad option, an undecodable source image) is
// reported as one of these, with a message that names the file and, where it applies, the byte
// offset or sample, so that a CLI can print it as one line and exit with status 1.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace ffcv {

// Base of every error the library raises on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A .beton file that cannot be read: truncated, corrupt, wrong version, inconsistent tables.
// what() reads "<path>: <problem> (at byte offset N)" when the offset is known.
class FormatError : public Error {
 public:
  FormatError(const std::string& path, const std::string& problem,
              std::optional<std::uint64_t> offset = std::nullopt);
  const std::string& path() const { return path_; }
  std::optional<std::uint64_t> offset() const { return offset_; }

 private:
  std::string path_;
  std::optional<std::uint64_t> offset_;
};

// A sample that cannot be written (bad value, undecodable source image, unsupported shape).
class EncodeError : public Error {
 public:
  using Error::Error;
};

// A bad argument or option given to the library (unknown write mode, bad page size, ...).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// An operating-system or network failure (open, write, rename, mmap, an HTTP request) with the
// path or URL and the reason: "<path>: cannot <action>: <errno text or reason>".
class IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& action, int errno_value);
  IoError(const std::string& path, const std::string& action, const std::string& reason);
  // The operating system's error number (ENOENT, EACCES, ...); 0 when the reason is not one.
  int errno_value() const { return errno_value_; }

 private:
  int errno_value_ = 0;
};

}  // namespace ffcv
