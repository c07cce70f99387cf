// A minimal JSON reader for the interop tests' expectation files (no library dependency).
//
// Parses the whole of RFC 8259 except that numbers are kept as their text, so that 64-bit
// integers and doubles convert exactly (as_int / as_double) instead of passing through a double.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace interop {

class Json {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  static Json parse(std::string_view text) {
    Parser parser{text, 0};
    Json value = parser.value();
    parser.skip_space();
    if (parser.pos != text.size()) parser.fail("trailing characters");
    return value;
  }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }

  bool as_bool() const {
    expect(Kind::kBool, "a boolean");
    return bool_;
  }
  std::int64_t as_int() const {
    expect(Kind::kNumber, "a number");
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text_.c_str(), &end, 10);
    if (errno != 0 || end != text_.c_str() + text_.size()) {
      throw std::runtime_error("JSON number " + text_ + " is not a 64-bit integer");
    }
    return value;
  }
  std::uint64_t as_uint() const {
    const std::int64_t value = as_int();
    if (value < 0) throw std::runtime_error("JSON number " + text_ + " is negative");
    return static_cast<std::uint64_t>(value);
  }
  double as_double() const {
    expect(Kind::kNumber, "a number");
    return std::strtod(text_.c_str(), nullptr);  // correctly rounded: exact round trip
  }
  const std::string& number_text() const {
    expect(Kind::kNumber, "a number");
    return text_;
  }
  const std::string& as_string() const {
    expect(Kind::kString, "a string");
    return text_;
  }
  const std::vector<Json>& items() const {
    expect(Kind::kArray, "an array");
    return *items_;
  }
  std::size_t size() const { return items().size(); }
  const Json& operator[](std::size_t index) const {
    const auto& list = items();
    if (index >= list.size()) {
      throw std::runtime_error("JSON array index " + std::to_string(index) + " out of range");
    }
    return list[index];
  }
  bool contains(const std::string& key) const {
    expect(Kind::kObject, "an object");
    return members_->count(key) != 0;
  }
  const Json& operator[](const std::string& key) const {
    expect(Kind::kObject, "an object");
    const auto it = members_->find(key);
    if (it == members_->end()) throw std::runtime_error("JSON object has no key '" + key + "'");
    return it->second;
  }

 private:
  struct Parser {
    std::string_view text;
    std::size_t pos;

    [[noreturn]] void fail(const std::string& what) const {
      throw std::runtime_error("JSON parse error at offset " + std::to_string(pos) + ": " + what);
    }
    void skip_space() {
      while (pos < text.size() &&
             (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t')) {
        ++pos;
      }
    }
    bool take(std::string_view word) {
      if (text.substr(pos, word.size()) != word) return false;
      pos += word.size();
      return true;
    }
    Json value() {
      skip_space();
      if (pos >= text.size()) fail("unexpected end");
      Json json;
      const char c = text[pos];
      if (c == '{') {
        ++pos;
        json.kind_ = Kind::kObject;
        json.members_ = std::make_shared<std::map<std::string, Json>>();
        skip_space();
        if (take("}")) return json;
        for (;;) {
          skip_space();
          if (pos >= text.size() || text[pos] != '"') fail("expected a key");
          std::string key = string();
          skip_space();
          if (!take(":")) fail("expected ':'");
          (*json.members_)[key] = value();
          skip_space();
          if (take("}")) return json;
          if (!take(",")) fail("expected ',' or '}'");
        }
      }
      if (c == '[') {
        ++pos;
        json.kind_ = Kind::kArray;
        json.items_ = std::make_shared<std::vector<Json>>();
        skip_space();
        if (take("]")) return json;
        for (;;) {
          json.items_->push_back(value());
          skip_space();
          if (take("]")) return json;
          if (!take(",")) fail("expected ',' or ']'");
        }
      }
      if (c == '"') {
        json.kind_ = Kind::kString;
        json.text_ = string();
        return json;
      }
      if (take("true")) {
        json.kind_ = Kind::kBool;
        json.bool_ = true;
        return json;
      }
      if (take("false")) {
        json.kind_ = Kind::kBool;
        return json;
      }
      if (take("null")) return json;
      const std::size_t start = pos;
      while (pos < text.size() &&
             std::string_view("+-0123456789.eE").find(text[pos]) != std::string_view::npos) {
        ++pos;
      }
      if (pos == start) fail("unexpected character");
      json.kind_ = Kind::kNumber;
      json.text_ = std::string(text.substr(start, pos - start));
      return json;
    }
    unsigned hex4() {
      if (pos + 4 > text.size()) fail("short \\u escape");
      unsigned value = 0;
      for (int k = 0; k < 4; ++k) {
        const char h = text[pos++];
        value <<= 4;
        if (h >= '0' && h <= '9') {
          value |= unsigned(h - '0');
        } else if (h >= 'a' && h <= 'f') {
          value |= unsigned(h - 'a' + 10);
        } else if (h >= 'A' && h <= 'F') {
          value |= unsigned(h - 'A' + 10);
        } else {
          fail("bad \\u escape");
        }
      }
      return value;
    }
    static void append_utf8(std::string& out, unsigned cp) {
      if (cp < 0x80) {
        out += char(cp);
      } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
      } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
      }
    }
    std::string string() {
      ++pos;  // opening quote
      std::string out;
      for (;;) {
        if (pos >= text.size()) fail("unterminated string");
        const char c = text[pos++];
        if (c == '"') return out;
        if (c != '\\') {
          out += c;
          continue;
        }
        if (pos >= text.size()) fail("unterminated escape");
        const char e = text[pos++];
        switch (e) {
          case '"':
          case '\\':
          case '/':
            out += e;
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'u': {
            unsigned cp = hex4();
            if (cp >= 0xD800 && cp < 0xDC00 && take("\\u")) {
              const unsigned low = hex4();
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            append_utf8(out, cp);
            break;
          }
          default:
            fail("bad escape");
        }
      }
    }
  };

  void expect(Kind kind, const char* what) const {
    if (kind_ != kind) throw std::runtime_error(std::string("JSON value is not ") + what);
  }

  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  std::string text_;  // number text or string value
  std::shared_ptr<std::vector<Json>> items_;
  std::shared_ptr<std::map<std::string, Json>> members_;
};

}  // namespace interop
