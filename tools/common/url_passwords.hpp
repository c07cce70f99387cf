// Passwords in URLs kept off the command lines of child processes.
//
// A process's command line is public on Linux: every user of the machine reads it (ps,
// /proc/PID/cmdline), while its environment and its open files are its owner's alone. A URL with
// a password ("http://user:pw@host/data.beton", given to `ffcv run --set`, `--grid`, or as an
// ablation's dataset) therefore reaches a child process without its password, and the password
// reaches it in a netrc file, which the HTTP reader consults for a URL that holds none
// (ffcv/storage/url_credentials.hpp, range_reader.hpp). spawn.hpp hands that file to the child
// as an anonymous memory file it alone can open: nothing is written to disk, and nothing
// outlives the processes.
#pragma once

#include <string>
#include <vector>

namespace ffcv::tools {

struct HiddenPasswords {
  // The arguments, each URL in them without its password (url_without_password).
  std::vector<std::string> arguments;
  // A netrc text: "machine HOST login USER password PW" for every URL that held a password
  // (user and password percent-decoded, quoted where netrc needs it), then the netrc the child
  // would have read otherwise ($NETRC, else ~/.netrc), so that its other logins still work.
  // Empty when no argument held a password.
  std::string netrc;
};

HiddenPasswords hide_url_passwords(const std::vector<std::string>& arguments);

}  // namespace ffcv::tools
