#include "ffcv/storage/range_reader.hpp"

#include <filesystem>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/errors.hpp"
#include "range_reader_kinds.hpp"

namespace ffcv {
namespace {

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

// The scheme of "scheme://...", lowercased; empty when `location` does not start with one.
std::string scheme_of(std::string_view location) {
  const std::size_t separator = location.find("://");
  if (separator == std::string_view::npos || separator == 0) return "";
  if (!std::isalpha(static_cast<unsigned char>(location[0]))) return "";
  std::string scheme;
  for (const char c : location.substr(0, separator)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return "";
    }
    scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return scheme;
}

// A setting given in code, else its environment variable, else the default; checked positive.
double seconds_setting(const std::optional<double>& given, const char* name, const char* variable,
                       double fallback) {
  double value = fallback;
  std::string source = std::string("HTTP options: ") + name;
  if (given) {
    value = *given;
  } else if (const char* text = std::getenv(variable); text && *text) {
    char* end = nullptr;
    value = std::strtod(text, &end);
    source = variable;
    if (*end != '\0') value = -1;
  }
  if (!(value > 0) || !std::isfinite(value)) {
    throw ConfigError(source + " must be a positive number of seconds" +
                      (given ? "" : std::string(" (got \"") + std::getenv(variable) + "\")"));
  }
  return value;
}

}  // namespace

ResolvedHttpOptions resolve_http_options(const HttpOptions& options) {
  ResolvedHttpOptions resolved;
  resolved.connect_timeout_seconds = seconds_setting(
      options.connect_timeout_seconds, "connect_timeout_seconds", "FFCV_HTTP_CONNECT_TIMEOUT", 10);
  resolved.stall_timeout_seconds = seconds_setting(
      options.stall_timeout_seconds, "stall_timeout_seconds", "FFCV_HTTP_STALL_TIMEOUT", 15);
  resolved.request_timeout_seconds = seconds_setting(
      options.request_timeout_seconds, "request_timeout_seconds", "FFCV_HTTP_REQUEST_TIMEOUT", 300);
  resolved.first_retry_delay_seconds =
      seconds_setting(options.first_retry_delay_seconds, "first_retry_delay_seconds", "", 0.1);
  resolved.max_attempts = 4;
  if (options.max_attempts) {
    resolved.max_attempts = *options.max_attempts;
    if (resolved.max_attempts < 1) {
      throw ConfigError("HTTP options: max_attempts must be at least 1 (got " +
                        std::to_string(resolved.max_attempts) + ")");
    }
  } else if (const char* text = std::getenv("FFCV_HTTP_ATTEMPTS"); text && *text) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 1 || value > 1000) {
      throw ConfigError(
          std::string("FFCV_HTTP_ATTEMPTS must be a whole number from 1 to 1000 (got \"") + text +
          "\")");
    }
    resolved.max_attempts = static_cast<int>(value);
  }
  resolved.ca_file = options.ca_file;
  if (resolved.ca_file.empty()) {
    if (const char* bundle = std::getenv("CURL_CA_BUNDLE"); bundle && *bundle) {
      resolved.ca_file = bundle;
    }
  }
  resolved.cancelled = options.cancelled;
  return resolved;
}

bool is_url(std::string_view location) {
  return starts_with_ignoring_case(location, "http://") ||
         starts_with_ignoring_case(location, "https://");
}

void check_supported_scheme(std::string_view location) {
  const std::string scheme = scheme_of(location);
  if (scheme.empty() || scheme == "http" || scheme == "https") return;
  std::string advice = "a .beton is read from a local path or an http:// or https:// URL";
  if (scheme == "file") advice += "; for a local file give its path";
  throw ConfigError(url_without_password(location) + ": the URL scheme " + scheme +
                    ":// is not supported (" + advice + ")");
}

std::unique_ptr<RangeReader> open_range_reader(const std::string& location,
                                               const HttpOptions& http) {
  check_supported_scheme(location);
  if (!is_url(location)) return open_file_range_reader(location);
  return open_http_range_reader(location, resolve_http_options(http));
}

bool local_file_missing(const std::string& location) {
  if (is_url(location)) return false;
  std::error_code error;
  return !std::filesystem::exists(location, error);
}

void pin_remote_version(const std::string& location, const HttpOptions& http) {
  if (is_url(location)) open_range_reader(location, http);
}

}  // namespace ffcv
