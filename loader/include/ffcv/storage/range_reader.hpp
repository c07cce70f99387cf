// RangeReader: random-access reads of one file's bytes from where it is stored.
//
//   a local path            pread on one file descriptor
//   http:// or https:// URL  HTTP range requests (libcurl), one connection per concurrent read
//
// The process cache reads its pages through a RangeReader, and the Reader fetches a remote
// file's header and tables through one, so a .beton can be trained from a web server or an
// object store's HTTP endpoint without a local copy. Other URL schemes (file://, ftp://, ...)
// are refused with a ConfigError that says which are supported.
//
// Remote reads: every response must be a 206 for exactly the range asked, of the version of the
// file that this process (or the parent that started it) saw at its first open of the URL
// (version_pins.hpp): the same size, and the same ETag or Last-Modified date, which every request
// carries as If-Match (or If-Unmodified-Since). Transient failures (connection refused, reset or
// closed early, a timeout, HTTP 429 and 5xx) are retried with exponential backoff; what still
// fails is an IoError naming the URL, the byte range, the timeout that ran out and the number of
// attempts. A server that ignores ranges is refused with a FormatError, a file that changed with
// a FileChangedError.
//
// Credentials: a password in the URL is used but never shown (url_credentials.hpp); better, give
// it in ~/.netrc (or $NETRC) or in $FFCV_HTTP_USER / $FFCV_HTTP_PASSWORD.
//
// Threading: read() may run on many threads at once; interrupt() from any thread makes the reads
// in progress (and their backoff waits) return false at once, and further reads too, until
// resume().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ffcv/util/errors.hpp"

namespace ffcv {

class RangeReader {
 public:
  virtual ~RangeReader() = default;

  // The path or URL (without its password), for messages.
  virtual const std::string& location() const = 0;
  // The file's size when it was opened.
  virtual std::uint64_t size() const = 0;
  // Reads exactly out.size() bytes at `offset` (the range must lie in the file). Returns true
  // when `out` holds them, false when interrupt() stopped the read (`out` is then unspecified).
  // Throws IoError when the bytes cannot be had, FileChangedError when the file changed.
  virtual bool read(std::uint64_t offset, std::span<std::uint8_t> out) = 0;
  virtual void interrupt() = 0;
  virtual void resume() = 0;
  // True for storage reached over a network (no memory mapping, no OS page cache).
  virtual bool remote() const = 0;
  // Drops the file's pages from the OS page cache, so that the next reads come from storage
  // (posix_fadvise DONTNEED); nothing to do for a remote file. Throws IoError.
  virtual void drop_os_cache() {}
};

// A file that is no longer the version this process first opened (a remote file replaced on the
// server): reading on would mix two files' bytes. Raised once, by the read that noticed.
class FileChangedError : public FormatError {
 public:
  using FormatError::FormatError;
};

// An open or read of a URL that HttpOptions::cancelled stopped.
class CancelledError : public Error {
 public:
  using Error::Error;
};

// How remote reads wait and retry. A value left unset comes from its environment variable when
// that is set, else from the default; every value must be positive.
//
//   setting                  variable                   default
//   connect_timeout_seconds  FFCV_HTTP_CONNECT_TIMEOUT  10 s   to open the connection (and TLS)
//   stall_timeout_seconds    FFCV_HTTP_STALL_TIMEOUT    15 s   a request that receives less than
//                                                              1 KiB/s for this long is abandoned
//   request_timeout_seconds  FFCV_HTTP_REQUEST_TIMEOUT  300 s  one request from start to end
//   max_attempts             FFCV_HTTP_ATTEMPTS         4      per range, the first one included
//
// A server that never answers thus fails a read after about 4 x 15 s plus the backoff waits
// (0.1 + 0.2 + 0.4 s).
struct HttpOptions {
  std::optional<double> connect_timeout_seconds;
  std::optional<double> stall_timeout_seconds;
  std::optional<double> request_timeout_seconds;
  std::optional<int> max_attempts;
  double first_retry_delay_seconds = 0.1;  // doubled after each failed attempt
  // https: the certificates to trust (a PEM file). Empty: $CURL_CA_BUNDLE when set, else the
  // system's store. Certificates are always verified.
  std::string ca_file;
  // When set, asked about every 100 ms while a request or a retry's backoff waits, on the
  // thread that waits: true stops that open or read with a CancelledError. For a caller that
  // must react to something else meanwhile (the Python package runs Python's signal handlers in
  // it, so that Ctrl-C ends a wait on a silent server). The reads of a file opened with it call
  // it too, from their own threads: it must be thread-safe.
  std::function<bool()> cancelled;
};

// The values a remote read uses: those set in `options`, else the environment's, else the
// defaults. Throws ConfigError naming the setting or variable that is not a positive number.
struct ResolvedHttpOptions {
  double connect_timeout_seconds = 0;
  double stall_timeout_seconds = 0;
  double request_timeout_seconds = 0;
  int max_attempts = 0;
  double first_retry_delay_seconds = 0;
  std::string ca_file;
  std::function<bool()> cancelled;
};
ResolvedHttpOptions resolve_http_options(const HttpOptions& options);

// True for "http://..." and "https://..." (any letter case).
bool is_url(std::string_view location);

// Throws ConfigError when `location` starts with a URL scheme other than http:// and https://
// ("file://...", "ftp://..."), naming the scheme and those supported. Every opener of a .beton
// (RangeReader, FileView, the page sources) calls it first.
void check_supported_scheme(std::string_view location);

// Opens `location`: a URL (see is_url) or a local path. A URL is contacted at once (one small
// range request) to learn the file's size and ETag and that the server honours ranges, and its
// version is pinned (or checked against the pin). Throws IoError when the file or server cannot
// be reached, FormatError when the server does not serve byte ranges, FileChangedError when the
// file is not the pinned version, ConfigError for bad options or an unsupported scheme.
std::unique_ptr<RangeReader> open_range_reader(const std::string& location,
                                               const HttpOptions& http = {});

// True when `location` is a local path (not a URL) that names no file: the one case a caller can
// explain before any work (a relative path read from another folder).
bool local_file_missing(const std::string& location);

// Opens `location` once when it is a URL, so that its version is pinned (version_pins.hpp) for
// this process and the children it starts; a local path is left alone. Throws as
// open_range_reader.
void pin_remote_version(const std::string& location, const HttpOptions& http = {});

}  // namespace ffcv
