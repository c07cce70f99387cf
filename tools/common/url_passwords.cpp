#include "common/url_passwords.hpp"

#include <cctype>
#include <cstdlib>
#include <string_view>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/text_file.hpp"

namespace ffcv::tools {
namespace {

struct Login {
  std::string host, user, password;
};

bool scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%40" -> "@": URLs carry user names and passwords percent-encoded, netrc files as they are.
std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Every URL of `text` whose user info holds a password, read as url_credentials.cpp reads a URL:
// the authority after "://" ends at the path, query or fragment, at white space or a quote.
void add_logins(std::string_view text, std::vector<Login>& logins) {
  for (std::size_t separator = text.find("://"); separator != std::string_view::npos;
       separator = text.find("://", separator + 3)) {
    if (separator == 0 || !scheme_char(text[separator - 1])) continue;
    const std::size_t begin = separator + 3;
    std::size_t end = begin;
    while (end < text.size() && text[end] != '/' && text[end] != '?' && text[end] != '#' &&
           !std::isspace(static_cast<unsigned char>(text[end])) && text[end] != '"' &&
           text[end] != '\'') {
      ++end;
    }
    const std::string_view authority = text.substr(begin, end - begin);
    const std::size_t at = authority.rfind('@');
    if (at == std::string_view::npos) continue;
    const std::string_view user_info = authority.substr(0, at);
    const std::size_t colon = user_info.find(':');
    if (colon == std::string_view::npos) continue;  // a user name alone: nothing to hide
    std::string_view host = authority.substr(at + 1);
    if (!host.empty() && host.front() == '[') {
      host = host.substr(
          1, host.find(']') == std::string_view::npos ? host.size() - 1 : host.find(']') - 1);
    } else {
      host = host.substr(0, host.find(':'));
    }
    if (host.empty()) continue;
    logins.push_back({std::string(host), percent_decoded(user_info.substr(0, colon)),
                      percent_decoded(user_info.substr(colon + 1))});
  }
}

// A netrc token: as it is, or in double quotes with \" and \\ escaped where it holds white space,
// a quote or a backslash (or is empty), as curl reads netrc files (7.84 and later).
std::string netrc_token(const std::string& text) {
  bool plain = !text.empty();
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\\') plain = false;
  }
  if (plain) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (c == '\r') {
      quoted += "\\r";
    } else if (c == '\t') {
      quoted += "\\t";
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

// The netrc file a child reads when NETRC does not name another: $NETRC, else ~/.netrc.
std::string own_netrc() {
  if (const char* netrc = std::getenv("NETRC"); netrc != nullptr && *netrc != '\0') {
    return read_text_if_present(netrc);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return read_text_if_present(std::string(home) + "/.netrc");
  }
  return "";
}

}  // namespace

HiddenPasswords hide_url_passwords(const std::vector<std::string>& arguments) {
  HiddenPasswords hidden;
  std::vector<Login> logins;
  for (const std::string& argument : arguments) {
    add_logins(argument, logins);
    hidden.arguments.push_back(url_without_password(argument));
  }
  if (logins.empty()) return hidden;
  for (const Login& login : logins) {
    hidden.netrc += "machine " + login.host;
    if (!login.user.empty()) hidden.netrc += " login " + netrc_token(login.user);
    hidden.netrc += " password " + netrc_token(login.password) + "\n";
  }
  const std::string own = own_netrc();
  hidden.netrc += own;
  if (!own.empty() && own.back() != '\n') hidden.netrc += "\n";
  return hidden;
}

}  // namespace ffcv::tools
