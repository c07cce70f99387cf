#include "common/url_passwords.hpp"

#include <cctype>
#include <cstdlib>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/text_file.hpp"

namespace ffcv::tools {
namespace {

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
  std::vector<UrlLogin> logins;
  for (const std::string& argument : arguments) {
    for (UrlLogin& login : url_logins(argument)) logins.push_back(std::move(login));
    hidden.arguments.push_back(url_without_password(argument));
  }
  if (logins.empty()) return hidden;
  for (const UrlLogin& login : logins) {
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
