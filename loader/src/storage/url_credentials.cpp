#include "ffcv/storage/url_credentials.hpp"

#include <cctype>

namespace ffcv {
namespace {

// Where a URL's user info lies in the text: [begin, at), `at` being the '@' that ends it; both
// npos when the URL has none.
struct UserInfo {
  std::size_t begin = std::string_view::npos;  // first byte after "://"
  std::size_t at = std::string_view::npos;     // the '@'
  std::size_t end = std::string_view::npos;    // where the authority (host and port) ends
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
  info.end = end;
  return info;
}

// Calls visit(info) for the user info of each URL in `text`, in order.
template <class Visit>
void for_each_user_info(std::string_view text, Visit visit) {
  for (std::size_t separator = text.find("://"); separator != std::string_view::npos;
       separator = text.find("://", separator + 3)) {
    if (separator == 0 || !scheme_char(text[separator - 1])) continue;
    const UserInfo info = user_info_after(text, separator);
    if (info.at != std::string_view::npos) visit(info);
  }
}

// `text` with each URL's user info passed through `keep` (which returns what stays of it).
template <class Keep>
std::string rewrite_user_info(std::string_view text, Keep keep) {
  std::string out;
  std::size_t copied = 0;
  for_each_user_info(text, [&](const UserInfo& info) {
    out.append(text.substr(copied, info.begin - copied));
    out += keep(text.substr(info.begin, info.at - info.begin));
    copied = info.at + 1;
  });
  out.append(text.substr(copied));
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%40" -> "@": URLs carry user names and passwords percent-encoded.
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

// The host of a URL's authority, after its user info: "[::1]:8080" -> "::1".
std::string_view host_of(std::string_view text, const UserInfo& info) {
  const std::string_view host = text.substr(info.at + 1, info.end - info.at - 1);
  if (!host.empty() && host.front() == '[') {
    const std::size_t close = host.find(']');
    return host.substr(1, close == std::string_view::npos ? host.size() - 1 : close - 1);
  }
  return host.substr(0, host.find(':'));
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

std::vector<UrlLogin> url_logins(std::string_view text) {
  std::vector<UrlLogin> logins;
  for_each_user_info(text, [&](const UserInfo& info) {
    const std::string_view user_info = text.substr(info.begin, info.at - info.begin);
    const std::size_t colon = user_info.find(':');
    const std::string_view host = host_of(text, info);
    if (colon == std::string_view::npos || host.empty()) return;  // no password, or no host
    logins.push_back({std::string(host), percent_decoded(user_info.substr(0, colon)),
                      percent_decoded(user_info.substr(colon + 1))});
  });
  return logins;
}

}  // namespace ffcv
