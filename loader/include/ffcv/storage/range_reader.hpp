// RangeReader: random-access reads of one file's bytes from where it is stored.
//
//   a local path            pread on one file descriptor
//   http:// or https:// URL  HTTP range requests (libcurl), one connection per concurrent read
//
// The process cache reads its pages through a RangeReader, and the Reader fetches a remote
// file's header and tables through one, so a .beton can be trained from a web server or an
// object store's HTTP endpoint without a local copy.
//
// Remote reads: every response must be a 206 for exactly the range asked, of a file of the size
// and ETag seen when it was opened. Transient failures (connection refused, reset or closed
// early, a stalled transfer, HTTP 429 and 5xx) are retried with exponential backoff; what still
// fails is an IoError naming the URL and the byte range. A server that ignores ranges, or a file
// that changed since it was opened (its size or ETag), is refused with a FormatError.
//
// Threading: read() may run on many threads at once; interrupt() from any thread makes the reads
// in progress (and their backoff waits) return false at once, and further reads too, until
// resume().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace ffcv {

class RangeReader {
 public:
  virtual ~RangeReader() = default;

  // The path or URL, for messages.
  virtual const std::string& location() const = 0;
  // The file's size when it was opened.
  virtual std::uint64_t size() const = 0;
  // Reads exactly out.size() bytes at `offset` (the range must lie in the file). Returns true
  // when `out` holds them, false when interrupt() stopped the read (`out` is then unspecified).
  // Throws IoError when the bytes cannot be had, FormatError when the file changed.
  virtual bool read(std::uint64_t offset, std::span<std::uint8_t> out) = 0;
  virtual void interrupt() = 0;
  virtual void resume() = 0;
  // True for storage reached over a network (no memory mapping, no OS page cache).
  virtual bool remote() const = 0;
  // Drops the file's pages from the OS page cache, so that the next reads come from storage
  // (posix_fadvise DONTNEED); nothing to do for a remote file. Throws IoError.
  virtual void drop_os_cache() {}
};

// How remote reads wait and retry. Every value must be positive.
struct HttpOptions {
  double connect_timeout_seconds = 10;
  // A transfer that receives nothing for this long is abandoned (and retried).
  double stall_timeout_seconds = 30;
  int max_attempts = 5;                    // per range, the first try included
  double first_retry_delay_seconds = 0.1;  // doubled after each failed attempt
  // https: the certificates to trust (a PEM file). Empty: $CURL_CA_BUNDLE when set, else the
  // system's store. Certificates are always verified.
  std::string ca_file;
};

// True for "http://..." and "https://..." (any letter case).
bool is_url(std::string_view location);

// Opens `location`: a URL (see is_url) or a local path. A URL is contacted at once (one small
// range request) to learn the file's size and ETag and that the server honours ranges. Throws
// IoError when the file or server cannot be reached, FormatError when the server does not serve
// byte ranges, ConfigError for bad options.
std::unique_ptr<RangeReader> open_range_reader(const std::string& location,
                                               const HttpOptions& http = {});

}  // namespace ffcv
