// A RangeReader over HTTP(S) with libcurl.
//
// Each concurrent read uses a Connection of its own: a libcurl easy handle (which keeps its
// connection to the server alive between reads) driven by a multi handle of its own, so that
// interrupt() can wake a transfer at once with curl_multi_wakeup instead of waiting for libcurl's
// next progress call. Idle connections wait in a pool for the next read.
//
// One read is up to `max_attempts` requests for "Range: bytes=A-B", each carrying the pinned
// version (version_pins.hpp) as If-Match (a strong ETag) or If-Unmodified-Since (no ETag). A
// response is accepted only when it is a 206 whose Content-Range is exactly A-B of a file of the
// pinned size, whose ETag (or Last-Modified, when the server sends no ETag) is the pinned one,
// and whose body is B - A + 1 bytes; a 412 means the file changed. Transient failures are
// retried after 0.1 s, 0.2 s, 0.4 s, ... (by default); see transient() for which those are.

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/storage/version_pins.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/stopwatch.hpp"
#include "range_reader_kinds.hpp"

namespace ffcv {
namespace {

void initialize_libcurl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string trimmed(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return std::string(text);
}

// An easy handle and the multi handle that drives it.
class Connection {
 public:
  Connection() : easy_(curl_easy_init()), multi_(curl_multi_init()) {
    if (easy_ == nullptr || multi_ == nullptr) throw std::bad_alloc();
  }
  ~Connection() {
    curl_multi_cleanup(multi_);
    curl_easy_cleanup(easy_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  CURL* easy() const { return easy_; }
  CURLM* multi() const { return multi_; }
  char* error_buffer() { return error_buffer_; }

 private:
  CURL* easy_;
  CURLM* multi_;
  char error_buffer_[CURL_ERROR_SIZE] = {};
};

// What one response said, gathered by the header and body callbacks.
struct Response {
  CURL* easy = nullptr;
  std::span<std::uint8_t> out;  // where the body goes
  long status = 0;
  std::string content_range;
  std::string etag;
  std::string last_modified;
  std::uint64_t received = 0;  // body bytes of a 206
  bool too_long = false;       // a 206 body longer than the range asked: the transfer was stopped
  bool whole_file = false;     // a 200: the server ignored the range; the transfer was stopped
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  Response& response = *static_cast<Response*>(user);
  const std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after a redirect or a 100 Continue): forget the previous one's headers.
    response.content_range.clear();
    response.etag.clear();
    response.last_modified.clear();
    return line.size();
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return line.size();
  const std::string name = lowercase(trimmed(line.substr(0, colon)));
  const std::string value = trimmed(line.substr(colon + 1));
  if (name == "content-range") response.content_range = value;
  if (name == "etag") response.etag = value;
  if (name == "last-modified") response.last_modified = value;
  return line.size();
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  Response& response = *static_cast<Response*>(user);
  const std::size_t length = size * count;
  curl_easy_getinfo(response.easy, CURLINFO_RESPONSE_CODE, &response.status);
  if (response.status == 200) {
    response.whole_file = true;
    return 0;  // stops the transfer: no need to download a whole file to refuse it
  }
  if (response.status != 206) return length;  // an error page: read and dropped
  if (length > response.out.size() - response.received) {
    response.too_long = true;
    return 0;
  }
  std::memcpy(response.out.data() + response.received, data, length);
  response.received += length;
  return length;
}

// "bytes 0-99/1234" -> {0, 99, 1234}; "bytes */1234" -> {nullopt, nullopt, 1234}; total may be
// "*" (unknown), given as nullopt.
struct ContentRange {
  std::optional<std::uint64_t> first, last, total;
};

std::optional<std::uint64_t> parse_number(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::optional<ContentRange> parse_content_range(const std::string& header) {
  const std::string text = lowercase(header);
  if (text.rfind("bytes ", 0) != 0) return std::nullopt;
  const std::string_view rest = std::string_view(text).substr(6);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  ContentRange range;
  const std::string_view span = rest.substr(0, slash);
  const std::string_view total = rest.substr(slash + 1);
  if (total != "*") {
    range.total = parse_number(total);
    if (!range.total) return std::nullopt;
  }
  if (span != "*") {
    const std::size_t dash = span.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    range.first = parse_number(span.substr(0, dash));
    range.last = parse_number(span.substr(dash + 1));
    if (!range.first || !range.last) return std::nullopt;
  }
  return range;
}

// What became of one attempt.
enum class Outcome { kDone, kInterrupted, kRetry };

// How often a wait asks HttpOptions::cancelled (at most; a busy transfer asks no more often).
constexpr std::chrono::milliseconds kCancelPoll{100};

// A transfer that receives less than this many bytes per second for the stall timeout is
// abandoned.
constexpr long kStallBytesPerSecond = 1024;

// "15 s", "0.5 s".
std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

// Frees a header list when the attempt that sent it ends.
struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void add(const std::string& line) {
    curl_slist* longer = curl_slist_append(list, line.c_str());
    if (longer == nullptr) throw std::bad_alloc();
    list = longer;
  }
};

class HttpRangeReader final : public RangeReader {
 public:
  HttpRangeReader(const std::string& url, const ResolvedHttpOptions& options)
      : url_(url),
        shown_(url_without_password(url)),
        url_has_user_(url_without_credentials(url) != url),
        url_has_password_(shown_ != url),
        options_(options) {
    initialize_libcurl();
    open();
  }

  const std::string& location() const override { return shown_; }
  std::uint64_t size() const override { return size_; }
  bool remote() const override { return true; }

  bool read(std::uint64_t offset, std::span<std::uint8_t> out) override {
    if (out.empty()) return !interrupted_.load();
    if (offset > size_ || out.size() > size_ - offset) {
      throw IoError(
          shown_, range_text(offset, out.size()),
          "the range lies beyond the end of the file (" + std::to_string(size_) + " bytes)");
    }
    return fetch(offset, out, /*probe=*/false);
  }

  void interrupt() override {
    std::lock_guard lock(mutex_);
    interrupted_.store(true);
    for (Connection* connection : active_) curl_multi_wakeup(connection->multi());
    backoff_wake_.notify_all();
  }

  void resume() override {
    std::lock_guard lock(mutex_);
    interrupted_.store(false);
  }

 private:
  static std::string range_text(std::uint64_t offset, std::uint64_t length) {
    return "read bytes [" + std::to_string(offset) + ", " + std::to_string(offset + length) + ")";
  }

  // The probe: one byte, to learn the size and validators and that ranges are honoured. The
  // version seen is pinned for the process, or checked against the pin of an earlier open.
  void open() {
    if (const std::optional<FileVersion> pin = pinned_version(url_)) {
      pinned_ = true;
      size_ = pin->size;
      etag_ = pin->etag;
      last_modified_ = pin->last_modified;
    }
    std::uint8_t first_byte = 0;
    fetch(0, {&first_byte, 1}, /*probe=*/true);
    if (pinned_) return;
    const FileVersion seen{size_, etag_, last_modified_};
    const FileVersion in_effect = pin_version(url_, seen);
    if (in_effect != seen) {
      throw changed("it is now " + seen.describe() + "; it was " + in_effect.describe());
    }
    // Said at the first open of the URL in the process tree (children inherit the pin).
    if (etag_.empty() && last_modified_.empty()) {
      std::fprintf(stderr,
                   "warning: %s: the server sends neither an ETag nor a Last-Modified date, so "
                   "only the file's size guards against its being replaced while this command "
                   "reads it\n",
                   shown_.c_str());
    }
  }

  FileChangedError changed(const std::string& how) const {
    return FileChangedError(shown_,
                            "the file changed on the server since this command first opened it "
                            "(" +
                                how + "); start again to read the new version");
  }

  bool fetch(std::uint64_t offset, std::span<std::uint8_t> out, bool probe) {
    const std::string action = probe ? "open" : range_text(offset, out.size());
    const Stopwatch started;
    std::unique_ptr<Connection> connection = take_connection();
    std::string last_problem;
    double delay = options_.first_retry_delay_seconds;
    for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
      if (attempt > 1 && !wait_before_retry(delay)) return false;
      if (attempt > 1) delay *= 2;
      const Outcome outcome = attempt_once(*connection, offset, out, probe, action, last_problem);
      if (outcome == Outcome::kDone) {
        give_back(std::move(connection));
        return true;
      }
      if (outcome == Outcome::kInterrupted) return false;
    }
    give_back(std::move(connection));
    const double seconds = started.seconds();
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, "%.1f s", seconds);
    throw IoError(shown_, action,
                  last_problem + " (gave up after " + std::to_string(options_.max_attempts) +
                      (options_.max_attempts == 1 ? " attempt" : " attempts") + " in " + elapsed +
                      "; FFCV_HTTP_ATTEMPTS sets how many)");
  }

  // One request. Returns kRetry with `problem` set for a transient failure; throws for a
  // permanent one.
  Outcome attempt_once(Connection& connection, std::uint64_t offset, std::span<std::uint8_t> out,
                       bool probe, const std::string& action, std::string& problem) {
    Response response;
    response.easy = connection.easy();
    response.out = out;
    const std::string range =
        std::to_string(offset) + "-" + std::to_string(offset + out.size() - 1);
    HeaderList headers;
    prepare_request(connection, response, headers, range);
    std::optional<CURLcode> result = perform(connection);
    if (!result) return Outcome::kInterrupted;
    curl_easy_getinfo(connection.easy(), CURLINFO_RESPONSE_CODE, &response.status);
    return judge_response(connection, response, *result, offset, out.size(), probe, action,
                          problem);
  }

  // Sets the connection's easy handle up for a request of `range` ("A-B") whose headers and body
  // go to `response`; `headers` receives the version pin and must outlive the transfer.
  void prepare_request(Connection& connection, Response& response, HeaderList& headers,
                       const std::string& range) const {
    CURL* easy = connection.easy();
    curl_easy_reset(easy);
    curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS,
                     static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    set_credentials(easy);
    // If-Match takes strong ETags only; a weak one (W/"...") leaves the date to guard the
    // version, and the response's ETag is still compared (check_unchanged).
    if (!etag_.empty() && etag_.rfind("W/", 0) != 0) {
      headers.add("If-Match: " + etag_);
    } else if (!last_modified_.empty()) {
      headers.add("If-Unmodified-Since: " + last_modified_);
    }
    if (headers.list != nullptr) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(easy, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "ffcv-cpp");
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::ceil(options_.connect_timeout_seconds * 1000)));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, kStallBytesPerSecond);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(std::ceil(options_.stall_timeout_seconds))));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::ceil(options_.request_timeout_seconds * 1000)));
    if (!options_.ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, options_.ca_file.c_str());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, connection.error_buffer());
    connection.error_buffer()[0] = '\0';
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &response);
  }

  // What a finished transfer (its libcurl `result`) of `length` bytes at `offset` amounts to, as
  // attempt_once returns it.
  Outcome judge_response(Connection& connection, const Response& response, CURLcode result,
                         std::uint64_t offset, std::uint64_t length, bool probe,
                         const std::string& action, std::string& problem) {
    if (response.whole_file) {
      throw FormatError(shown_,
                        "the server does not serve byte ranges (it answered a range request with "
                        "the whole file, HTTP 200); serve the file from an HTTP server that "
                        "supports range requests");
    }
    if (response.too_long) {
      throw IoError(shown_, action,
                    "the server sent more bytes than the range asked for (Content-Range: " +
                        response.content_range + ")");
    }
    if (result != CURLE_OK) {
      const char* detail = connection.error_buffer()[0] != '\0' ? connection.error_buffer()
                                                                : curl_easy_strerror(result);
      problem = result == CURLE_OPERATION_TIMEDOUT ? timeout_text(detail) : trimmed(detail);
      if (transient(result)) return Outcome::kRetry;
      throw IoError(shown_, action, problem);
    }
    if (response.status == 429 || response.status >= 500) {
      problem = "the server answered HTTP " + std::to_string(response.status);
      return Outcome::kRetry;
    }
    if (response.status == 412) {
      throw changed("it no longer has the " + FileVersion{size_, etag_, last_modified_}.describe() +
                    " it was opened with: HTTP 412");
    }
    if (response.status == 416) return judge_unsatisfiable(response, offset, length, probe);
    if (response.status != 206) {
      throw IoError(shown_, action,
                    "the server answered HTTP " + std::to_string(response.status) +
                        (response.status == 401 || response.status == 403
                             ? " (give the user name and password in ~/.netrc or "
                               "FFCV_HTTP_USER / FFCV_HTTP_PASSWORD)"
                             : ""));
    }
    return accept_partial_content(response, offset, length, probe, action, problem);
  }

  // An HTTP 416: the answer to the probe of an empty file, or else a file that shrank.
  Outcome judge_unsatisfiable(const Response& response, std::uint64_t offset, std::uint64_t length,
                              bool probe) {
    const std::optional<ContentRange> range_header = parse_content_range(response.content_range);
    if (probe && range_header && range_header->total == 0) {
      if (pinned_) {
        check_unchanged(response, 0);
      } else {
        size_ = 0;  // an empty file: nothing to read, and the Reader says what is wrong with it
        etag_ = response.etag;
        last_modified_ = response.last_modified;
      }
      return Outcome::kDone;
    }
    throw changed("the range [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
                  ") is no longer in it: HTTP 416");
  }

  // An HTTP 206: its Content-Range must be the range asked for (the probe pins or checks the
  // version it names) and its body whole; a short body is worth another attempt.
  Outcome accept_partial_content(const Response& response, std::uint64_t offset,
                                 std::uint64_t length, bool probe, const std::string& action,
                                 std::string& problem) {
    const std::optional<ContentRange> got = parse_content_range(response.content_range);
    if (!got || !got->first || !got->last) {
      throw IoError(shown_, action,
                    "the server's answer has no usable Content-Range header ('" +
                        response.content_range + "')");
    }
    if (probe && !pinned_) {
      if (!got->total) {
        throw FormatError(shown_, "the server does not say how large the file is (Content-Range: " +
                                      response.content_range + ")");
      }
      size_ = *got->total;
      etag_ = response.etag;
      last_modified_ = response.last_modified;
    } else {
      check_unchanged(response, got->total);
    }
    const std::uint64_t last = offset + length - 1;
    if (*got->first != offset || (*got->last != last && !(probe && *got->last < last))) {
      throw IoError(shown_, action,
                    "the server answered with other bytes than those asked for (Content-Range: " +
                        response.content_range + ")");
    }
    const std::uint64_t expected = *got->last - *got->first + 1;
    if (response.received != expected) {
      problem = "the answer ended after " + std::to_string(response.received) + " of " +
                std::to_string(expected) + " bytes";
      return Outcome::kRetry;
    }
    return Outcome::kDone;
  }

  void check_unchanged(const Response& response, std::optional<std::uint64_t> total) const {
    std::string change;
    if (total && *total != size_) {
      change =
          "its size is now " + std::to_string(*total) + " bytes, it was " + std::to_string(size_);
    } else if (!etag_.empty() && !response.etag.empty() && response.etag != etag_) {
      change = "its ETag is now " + response.etag + ", it was " + etag_;
    } else if (etag_.empty() && !last_modified_.empty() && !response.last_modified.empty() &&
               response.last_modified != last_modified_) {
      change = "it was modified at " + response.last_modified + ", it was opened as of " +
               last_modified_;
    }
    if (!change.empty()) throw changed(change);
  }

  // What a timeout means, with the setting that governs it, from libcurl's message.
  std::string timeout_text(const std::string& detail) const {
    if (detail.find("too slow") != std::string::npos) {
      return "the transfer stalled: less than " + std::to_string(kStallBytesPerSecond) +
             " bytes/s for " + seconds_text(options_.stall_timeout_seconds) +
             " (the stall timeout, FFCV_HTTP_STALL_TIMEOUT)";
    }
    if (detail.find("onnection timed out") != std::string::npos ||
        detail.find("esolving timed out") != std::string::npos) {
      return "no connection within " + seconds_text(options_.connect_timeout_seconds) +
             " (the connect timeout, FFCV_HTTP_CONNECT_TIMEOUT)";
    }
    return "the request took longer than " + seconds_text(options_.request_timeout_seconds) +
           " (the request timeout, FFCV_HTTP_REQUEST_TIMEOUT)";
  }

  // The user name and password when the URL does not hold them: $FFCV_HTTP_USER and
  // $FFCV_HTTP_PASSWORD, else the netrc file ($NETRC, else ~/.netrc) when it has the host.
  void set_credentials(CURL* easy) const {
    curl_easy_setopt(easy, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
    if (const char* netrc = std::getenv("NETRC"); netrc && *netrc) {
      curl_easy_setopt(easy, CURLOPT_NETRC_FILE, netrc);
    }
    if (!url_has_user_) {
      if (const char* user = std::getenv("FFCV_HTTP_USER"); user && *user) {
        curl_easy_setopt(easy, CURLOPT_USERNAME, user);
      }
    }
    if (!url_has_password_) {
      if (const char* password = std::getenv("FFCV_HTTP_PASSWORD"); password && *password) {
        curl_easy_setopt(easy, CURLOPT_PASSWORD, password);
      }
    }
  }

  // Transfer errors worth another attempt: the server or network may do better next time.
  static bool transient(CURLcode code) {
    switch (code) {
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_CONNECT:
      case CURLE_OPERATION_TIMEDOUT:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_PARTIAL_FILE:
      case CURLE_GOT_NOTHING:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
      case CURLE_SSL_CONNECT_ERROR:
        return true;
      default:
        return false;
    }
  }

  // Throws CancelledError when options_.cancelled says so, asking it at most every kCancelPoll
  // (`last_asked` holds when this wait last asked).
  void check_cancelled(std::chrono::steady_clock::time_point& last_asked) const {
    if (!options_.cancelled) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_asked < kCancelPoll) return;
    last_asked = now;
    if (options_.cancelled()) {
      throw CancelledError(shown_ + ": cancelled while waiting for the server");
    }
  }

  // Runs the transfer on the connection's multi handle until it ends or interrupt() is called.
  // Returns the transfer's result, or nullopt when interrupted. Throws CancelledError (see
  // check_cancelled).
  std::optional<CURLcode> perform(Connection& connection) {
    CURLM* multi = connection.multi();
    curl_multi_add_handle(multi, connection.easy());
    {
      std::lock_guard lock(mutex_);
      active_.insert(&connection);
    }
    std::optional<CURLcode> result;
    std::exception_ptr cancelled;
    auto last_asked = std::chrono::steady_clock::now();
    const int poll_ms = options_.cancelled ? static_cast<int>(kCancelPoll.count()) : 1000;
    int running = 1;
    while (!interrupted_.load()) {
      try {
        check_cancelled(last_asked);
      } catch (const CancelledError&) {
        cancelled = std::current_exception();
        break;
      }
      if (curl_multi_perform(multi, &running) != CURLM_OK) {
        result = CURLE_RECV_ERROR;
        break;
      }
      if (running == 0) {
        int queued = 0;
        result = CURLE_RECV_ERROR;
        while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
          if (message->msg == CURLMSG_DONE) result = message->data.result;
        }
        break;
      }
      curl_multi_poll(multi, nullptr, 0, poll_ms, nullptr);
    }
    {
      std::lock_guard lock(mutex_);
      active_.erase(&connection);
    }
    curl_multi_remove_handle(multi, connection.easy());
    if (cancelled) std::rethrow_exception(cancelled);
    return result;
  }

  // Sleeps `seconds`, or less when interrupted. Returns false when interrupted. Throws
  // CancelledError (see check_cancelled).
  bool wait_before_retry(double seconds) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(seconds));
    auto last_asked = std::chrono::steady_clock::time_point{};
    for (;;) {
      check_cancelled(last_asked);
      std::unique_lock lock(mutex_);
      const auto slice = options_.cancelled
                             ? std::min(until, std::chrono::steady_clock::now() + kCancelPoll)
                             : until;
      backoff_wake_.wait_until(lock, slice, [this] { return interrupted_.load(); });
      if (interrupted_.load()) return false;
      if (std::chrono::steady_clock::now() >= until) return true;
    }
  }

  std::unique_ptr<Connection> take_connection() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        std::unique_ptr<Connection> connection = std::move(idle_.back());
        idle_.pop_back();
        return connection;
      }
    }
    return std::make_unique<Connection>();
  }

  void give_back(std::unique_ptr<Connection> connection) {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(connection));
  }

  const std::string url_;    // as given: what libcurl requests, credentials included
  const std::string shown_;  // without its password: for messages and location()
  const bool url_has_user_;
  const bool url_has_password_;
  const ResolvedHttpOptions options_;
  bool pinned_ = false;  // an earlier open pinned the version below before this one's probe
  std::uint64_t size_ = 0;
  std::string etag_;           // the pinned version; empty when the server sends none
  std::string last_modified_;  // likewise

  std::atomic<bool> interrupted_{false};
  std::mutex mutex_;  // guards active_ and idle_; backoff waits wait on it
  std::condition_variable backoff_wake_;
  std::set<Connection*> active_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace

std::unique_ptr<RangeReader> open_http_range_reader(const std::string& url,
                                                    const ResolvedHttpOptions& options) {
  return std::make_unique<HttpRangeReader>(url, options);
}

}  // namespace ffcv
