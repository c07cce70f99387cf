// A RangeReader over HTTP(S) with libcurl.
//
// Each concurrent read uses a Connection of its own: a libcurl easy handle (which keeps its
// connection to the server alive between reads) driven by a multi handle of its own, so that
// interrupt() can wake a transfer at once with curl_multi_wakeup instead of waiting for libcurl's
// next progress call. Idle connections wait in a pool for the next read.
//
// One read is up to `max_attempts` requests for "Range: bytes=A-B". A response is accepted only
// when it is a 206 whose Content-Range is exactly A-B of a file of the size seen at open, whose
// ETag (or Last-Modified, when the server sends no ETag) is the one seen at open, and whose body
// is B - A + 1 bytes. Transient failures are retried after 0.1 s, 0.2 s, 0.4 s, ... (by
// default); see classify() for which those are.

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ffcv/errors.hpp"
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

class HttpRangeReader final : public RangeReader {
 public:
  HttpRangeReader(const std::string& url, const HttpOptions& options)
      : url_(url), options_(options) {
    if (options_.ca_file.empty()) {
      if (const char* bundle = std::getenv("CURL_CA_BUNDLE"); bundle && *bundle) {
        options_.ca_file = bundle;
      }
    }
    initialize_libcurl();
    open();
  }

  const std::string& location() const override { return url_; }
  std::uint64_t size() const override { return size_; }
  bool remote() const override { return true; }

  bool read(std::uint64_t offset, std::span<std::uint8_t> out) override {
    if (out.empty()) return !interrupted_.load();
    if (offset > size_ || out.size() > size_ - offset) {
      throw IoError(
          url_, range_text(offset, out.size()),
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

  // The probe: one byte, to learn the size and validators and that ranges are honoured.
  void open() {
    std::uint8_t first_byte = 0;
    fetch(0, {&first_byte, 1}, /*probe=*/true);
  }

  bool fetch(std::uint64_t offset, std::span<std::uint8_t> out, bool probe) {
    const std::string action = probe ? "open" : range_text(offset, out.size());
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
    throw IoError(url_, action,
                  last_problem + " (" + std::to_string(options_.max_attempts) +
                      (options_.max_attempts == 1 ? " attempt)" : " attempts)"));
  }

  // One request. Returns kRetry with `problem` set for a transient failure; throws for a
  // permanent one.
  Outcome attempt_once(Connection& connection, std::uint64_t offset, std::span<std::uint8_t> out,
                       bool probe, const std::string& action, std::string& problem) {
    CURL* easy = connection.easy();
    Response response;
    response.easy = easy;
    response.out = out;
    const std::string range =
        std::to_string(offset) + "-" + std::to_string(offset + out.size() - 1);
    curl_easy_reset(easy);
    curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "ffcv-cpp");
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::ceil(options_.connect_timeout_seconds * 1000)));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(std::ceil(options_.stall_timeout_seconds))));
    if (!options_.ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, options_.ca_file.c_str());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, connection.error_buffer());
    connection.error_buffer()[0] = '\0';
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &response);

    std::optional<CURLcode> result = perform(connection);
    if (!result) return Outcome::kInterrupted;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &response.status);

    if (response.whole_file) {
      throw FormatError(url_,
                        "the server does not serve byte ranges (it answered a range request with "
                        "the whole file, HTTP 200); serve the file from an HTTP server that "
                        "supports range requests");
    }
    if (response.too_long) {
      throw IoError(url_, action,
                    "the server sent more bytes than the range asked for (Content-Range: " +
                        response.content_range + ")");
    }
    if (*result != CURLE_OK) {
      const char* detail = connection.error_buffer()[0] != '\0' ? connection.error_buffer()
                                                                : curl_easy_strerror(*result);
      problem = trimmed(detail);
      if (transient(*result)) return Outcome::kRetry;
      throw IoError(url_, action, problem);
    }
    if (response.status == 429 || response.status >= 500) {
      problem = "the server answered HTTP " + std::to_string(response.status);
      return Outcome::kRetry;
    }
    if (response.status == 416) {
      const std::optional<ContentRange> range_header = parse_content_range(response.content_range);
      if (probe && range_header && range_header->total == 0) {
        size_ = 0;  // an empty file: nothing to read, and the Reader says what is wrong with it
        etag_ = response.etag;
        last_modified_ = response.last_modified;
        return Outcome::kDone;
      }
      throw FormatError(url_, "the file changed on the server since it was opened: the range [" +
                                  std::to_string(offset) + ", " +
                                  std::to_string(offset + out.size()) +
                                  ") is no longer in it (HTTP 416)");
    }
    if (response.status != 206) {
      throw IoError(url_, action, "the server answered HTTP " + std::to_string(response.status));
    }
    const std::optional<ContentRange> got = parse_content_range(response.content_range);
    if (!got || !got->first || !got->last) {
      throw IoError(url_, action,
                    "the server's answer has no usable Content-Range header ('" +
                        response.content_range + "')");
    }
    if (probe) {
      if (!got->total) {
        throw FormatError(url_, "the server does not say how large the file is (Content-Range: " +
                                    response.content_range + ")");
      }
      size_ = *got->total;
      etag_ = response.etag;
      last_modified_ = response.last_modified;
    } else {
      check_unchanged(response, got->total);
    }
    const std::uint64_t last = offset + out.size() - 1;
    if (*got->first != offset || (*got->last != last && !(probe && *got->last < last))) {
      throw IoError(url_, action,
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
    if (!change.empty()) {
      throw FormatError(url_, "the file changed on the server since it was opened (" + change +
                                  "); reopen it to read the new version");
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

  // Runs the transfer on the connection's multi handle until it ends or interrupt() is called.
  // Returns the transfer's result, or nullopt when interrupted.
  std::optional<CURLcode> perform(Connection& connection) {
    CURLM* multi = connection.multi();
    curl_multi_add_handle(multi, connection.easy());
    {
      std::lock_guard lock(mutex_);
      active_.insert(&connection);
    }
    std::optional<CURLcode> result;
    int running = 1;
    while (!interrupted_.load()) {
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
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    {
      std::lock_guard lock(mutex_);
      active_.erase(&connection);
    }
    curl_multi_remove_handle(multi, connection.easy());
    return result;
  }

  // Sleeps `seconds`, or less when interrupted. Returns false when interrupted.
  bool wait_before_retry(double seconds) {
    std::unique_lock lock(mutex_);
    backoff_wake_.wait_for(lock, std::chrono::duration<double>(seconds),
                           [this] { return interrupted_.load(); });
    return !interrupted_.load();
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

  const std::string url_;
  HttpOptions options_;
  std::uint64_t size_ = 0;
  std::string etag_;           // as seen at open; empty when the server sends none
  std::string last_modified_;  // likewise

  std::atomic<bool> interrupted_{false};
  std::mutex mutex_;  // guards active_ and idle_; backoff waits wait on it
  std::condition_variable backoff_wake_;
  std::set<Connection*> active_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace

std::unique_ptr<RangeReader> open_http_range_reader(const std::string& url,
                                                    const HttpOptions& options) {
  return std::make_unique<HttpRangeReader>(url, options);
}

}  // namespace ffcv
