// User names and passwords in URLs ("http://user:secret@host/data.beton"): kept out of every
// message, report and file the project writes.
//
// A password belongs in ~/.netrc (or the file $NETRC names) or in $FFCV_HTTP_PASSWORD, not in a
// URL: a URL is printed in errors and reports and stored in a run's recipe.toml and checkpoint.
// One given in a URL is still used to log in, but everything shown or written names the URL
// without it ("http://user@host/data.beton"), and a later run reads the password from netrc or
// the environment.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ffcv {

// `url` without the password of its user info: "http://user:pw@host/x" -> "http://user@host/x".
// Anything that is not a URL with a password comes back unchanged.
std::string url_without_password(std::string_view url);

// `url` without any user info: "http://user:pw@host/x" -> "http://host/x".
std::string url_without_credentials(std::string_view url);

// `text` (an error message, a report) with the password of every URL in it removed.
std::string redact_url_passwords(std::string_view text);

// A login written in a URL's user info, user and password percent-decoded.
struct UrlLogin {
  std::string host;  // without its port ("::1" of "[::1]:8080")
  std::string user, password;
};

// The logins of every URL in `text` whose user info holds a password, in order: what a netrc
// handed to a child in the URL's place must hold (tools/common/url_passwords.hpp).
std::vector<UrlLogin> url_logins(std::string_view text);

}  // namespace ffcv
