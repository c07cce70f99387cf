#include "ffcv/storage/range_reader.hpp"

#include <cctype>
#include <cmath>

#include "ffcv/errors.hpp"
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

void check_positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw ConfigError(std::string("HTTP options: ") + name +
                      " must be a positive number of seconds");
  }
}

}  // namespace

bool is_url(std::string_view location) {
  return starts_with_ignoring_case(location, "http://") ||
         starts_with_ignoring_case(location, "https://");
}

std::unique_ptr<RangeReader> open_range_reader(const std::string& location,
                                               const HttpOptions& http) {
  if (!is_url(location)) return open_file_range_reader(location);
  check_positive(http.connect_timeout_seconds, "connect_timeout_seconds");
  check_positive(http.stall_timeout_seconds, "stall_timeout_seconds");
  check_positive(http.first_retry_delay_seconds, "first_retry_delay_seconds");
  if (http.max_attempts < 1) {
    throw ConfigError("HTTP options: max_attempts must be at least 1 (got " +
                      std::to_string(http.max_attempts) + ")");
  }
  return open_http_range_reader(location, http);
}

}  // namespace ffcv
