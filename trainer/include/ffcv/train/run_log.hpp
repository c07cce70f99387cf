// Run logs: one JSON object per line (JSON Lines), appended and flushed as each epoch ends, so a
// crashed or interrupted run keeps everything it logged and `tail -f` shows progress.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace ffcv::train {

// A flat JSON object built field by field, in insertion order.
class JsonRecord {
 public:
  JsonRecord& add(const std::string& key, double value);
  JsonRecord& add(const std::string& key, std::int64_t value);
  JsonRecord& add(const std::string& key, std::uint64_t value);
  JsonRecord& add(const std::string& key, int value) {
    return add(key, static_cast<std::int64_t>(value));
  }
  JsonRecord& add(const std::string& key, bool value);
  JsonRecord& add(const std::string& key, const std::string& value);
  JsonRecord& add(const std::string& key, const char* value) {
    return add(key, std::string(value));
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& name);
  std::string body_;
};

class RunLog {
 public:
  // Appends to `path` (created if missing). An empty path makes a log that writes nothing.
  explicit RunLog(const std::string& path);
  void write(const JsonRecord& record);

 private:
  std::ofstream out_;
};

// Writes `text` to `path` through a temporary file and a rename.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace ffcv::train
