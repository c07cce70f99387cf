#include "ffcv/train/run_log.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"

namespace ffcv::train {

void JsonRecord::key(const std::string& name) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(name) + ": ";
}

JsonRecord& JsonRecord::add(const std::string& name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    body_ += "null";  // JSON has no NaN or infinity
  } else {
    char text[32];
    std::snprintf(text, sizeof(text), "%.9g", value);
    body_ += text;
  }
  return *this;
}

JsonRecord& JsonRecord::add(const std::string& name, std::int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonRecord& JsonRecord::add(const std::string& name, std::uint64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonRecord& JsonRecord::add(const std::string& name, bool value) {
  key(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonRecord& JsonRecord::add(const std::string& name, const std::string& value) {
  key(name);
  body_ += json_quote(value);
  return *this;
}

RunLog::RunLog(const std::string& path) {
  if (path.empty()) return;
  out_.open(path, std::ios::app);
  if (!out_) throw IoError(path, "open log", errno);
}

void RunLog::write(const JsonRecord& record) {
  if (!out_.is_open()) return;
  out_ << record.str() << '\n';
  out_.flush();
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, std::string_view(text));
}

}  // namespace ffcv::train
