#include "ffcv/storage/url_credentials.hpp"

#include <cctype>

namespace ffcv {
namespace {

// Where a URL's user info lies in the text: [begin, at), `at` being the '@' that ends it; both
// npos when the URL has none.
struct UserInfo {
  std::size_t begin = std::string_view::npos;  // first byte after "://"
  std::size_t at = std::string_view::npos;     // the '@'
};

bool scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

// The user info of the URL whose "://" is at `separator` in `text`.
UserInfo user_info_after(std::string_view text, std::size_t separator) {
  UserInfo info;
  const std::size_t begin = separator + 3;
  std::size_t end = begin;
  // The authority ends at the path, query or fragment, or where the URL ends in running text.
  while (end < text.size() && text[end] != '/' && text[end] != '?' && text[end] != '#' &&
         !std::isspace(static_cast<unsigned char>(text[end])) && text[end] != '"' &&
         text[end] != '\'') {
    ++end;
  }
  const std::size_t at = text.substr(begin, end - begin).rfind('@');
  if (at == std::string_view::npos) return info;
  info.begin = begin;
  info.at = begin + at;
  return info;
}

// `text` with each URL's user info passed through `keep` (which returns what stays of it).
template <class Keep>
std::string rewrite_user_info(std::string_view text, Keep keep) {
  std::string out;
  std::size_t copied = 0;
  for (std::size_t separator = text.find("://"); separator != std::string_view::npos;
       separator = text.find("://", separator + 3)) {
    if (separator == 0 || !scheme_char(text[separator - 1])) continue;
    const UserInfo info = user_info_after(text, separator);
    if (info.at == std::string_view::npos) continue;
    out.append(text.substr(copied, info.begin - copied));
    out += keep(text.substr(info.begin, info.at - info.begin));
    copied = info.at + 1;
  }
  out.append(text.substr(copied));
  return out;
}

std::string user_only(std::string_view user_info) {
  const std::size_t colon = user_info.find(':');
  const std::string_view user = user_info.substr(0, colon);
  return user.empty() ? std::string() : std::string(user) + "@";
}

}  // namespace

std::string url_without_password(std::string_view url) { return rewrite_user_info(url, user_only); }

std::string url_without_credentials(std::string_view url) {
  return rewrite_user_info(url, [](std::string_view) { return std::string(); });
}

std::string redact_url_passwords(std::string_view text) {
  return rewrite_user_info(text, user_only);
}

}  // namespace ffcv
