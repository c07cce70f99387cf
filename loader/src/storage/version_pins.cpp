#include "ffcv/storage/version_pins.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

// Header values are trimmed lines, so they hold no newline; a tab is replaced, so that the
// environment's form (one pin a line, tab-separated) always parses back.
std::string without_separators(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n') c = ' ';
  }
  return text;
}

class Pins {
 public:
  static Pins& instance() {
    static Pins pins;
    return pins;
  }

  std::optional<FileVersion> find(const std::string& url) {
    std::lock_guard lock(mutex_);
    load_inherited();
    const auto it = pins_.find(url_without_credentials(url));
    if (it == pins_.end()) return std::nullopt;
    return it->second;
  }

  FileVersion pin(const std::string& url, const FileVersion& seen) {
    std::lock_guard lock(mutex_);
    load_inherited();
    FileVersion clean{seen.size, without_separators(seen.etag),
                      without_separators(seen.last_modified)};
    return pins_.emplace(url_without_credentials(url), std::move(clean)).first->second;
  }

  void clear() {
    std::lock_guard lock(mutex_);
    load_inherited();  // what the parent pinned is forgotten too
    pins_.clear();
  }

  std::string environment() {
    std::lock_guard lock(mutex_);
    load_inherited();
    if (pins_.empty()) return "";
    std::string text = std::string(kPinsEnvironmentVariable) + "=";
    for (const auto& [url, version] : pins_) {
      text += std::to_string(version.size) + "\t" + version.etag + "\t" + version.last_modified +
              "\t" + url + "\n";
    }
    return text;
  }

 private:
  // The parent's pins, read once, at the first use.
  void load_inherited() {
    if (loaded_) return;
    loaded_ = true;
    const char* text = std::getenv(kPinsEnvironmentVariable);
    if (text == nullptr) return;
    const std::string all = text;
    std::size_t begin = 0;
    while (begin < all.size()) {
      std::size_t end = all.find('\n', begin);
      if (end == std::string::npos) end = all.size();
      const std::string line = all.substr(begin, end - begin);
      begin = end + 1;
      if (line.empty()) continue;
      std::string parts[4];
      std::size_t from = 0;
      for (int i = 0; i < 3; ++i) {
        const std::size_t tab = line.find('\t', from);
        if (tab == std::string::npos) throw_malformed(line);
        parts[i] = line.substr(from, tab - from);
        from = tab + 1;
      }
      parts[3] = line.substr(from);
      char* number_end = nullptr;
      const unsigned long long size = std::strtoull(parts[0].c_str(), &number_end, 10);
      if (parts[0].empty() || *number_end != '\0' || parts[3].empty()) throw_malformed(line);
      pins_.emplace(parts[3], FileVersion{size, parts[1], parts[2]});
    }
  }

  [[noreturn]] static void throw_malformed(const std::string& line) {
    throw ConfigError(std::string(kPinsEnvironmentVariable) +
                      ": not a pinned file version (SIZE<tab>ETAG<tab>LAST-MODIFIED<tab>URL): \"" +
                      redact_url_passwords(line) + "\"");
  }

  std::mutex mutex_;
  bool loaded_ = false;
  std::map<std::string, FileVersion> pins_;  // by URL without credentials
};

}  // namespace

std::string FileVersion::describe() const {
  std::string text = std::to_string(size) + " bytes";
  if (!etag.empty()) text += ", ETag " + etag;
  if (!last_modified.empty()) text += ", Last-Modified " + last_modified;
  return text;
}

std::optional<FileVersion> pinned_version(const std::string& url) {
  return Pins::instance().find(url);
}

FileVersion pin_version(const std::string& url, const FileVersion& seen) {
  return Pins::instance().pin(url, seen);
}

void forget_pinned_versions() { Pins::instance().clear(); }

std::string pinned_versions_environment() { return Pins::instance().environment(); }

}  // namespace ffcv
