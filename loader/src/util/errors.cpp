#include "ffcv/util/errors.hpp"

#include <cstring>

namespace ffcv {
namespace {

std::string format_message(const std::string& path, const std::string& problem,
                           std::optional<std::uint64_t> offset) {
  std::string message = path + ": " + problem;
  if (offset) {
    message += " (at byte offset ";
    message += std::to_string(*offset);
    message += ')';
  }
  return message;
}

}  // namespace

FormatError::FormatError(const std::string& path, const std::string& problem,
                         std::optional<std::uint64_t> offset)
    : Error(format_message(path, problem, offset)), path_(path), offset_(offset) {}

IoError::IoError(const std::string& path, const std::string& action, int errno_value)
    : Error(path + ": cannot " + action + ": " + std::strerror(errno_value)),
      errno_value_(errno_value) {}

IoError::IoError(const std::string& path, const std::string& action, const std::string& reason)
    : Error(path + ": cannot " + action + ": " + reason) {}

}  // namespace ffcv
