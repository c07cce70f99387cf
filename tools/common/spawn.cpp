#include "common/spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/url_passwords.hpp"
#include "ffcv/storage/version_pins.hpp"
#include "ffcv/util/errors.hpp"

extern char** environ;

namespace ffcv::tools {
namespace {

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> result;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const std::string& o : overrides)
      replaced |= o.compare(0, name.size() + 1, name + "=") == 0;
    if (!replaced) result.push_back(text);
  }
  result.insert(result.end(), overrides.begin(), overrides.end());
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

// An anonymous memory file holding `text`, close-on-exec, at a descriptor above stderr (so that
// redirecting the child's stdout and stderr cannot replace it). Throws IoError.
int memory_file(const std::string& text) {
  const int made = ::memfd_create("ffcv-netrc", MFD_CLOEXEC);
  if (made < 0) throw IoError("netrc", "create a memory file for a child's logins", errno);
  int fd = made;
  if (fd <= 2) {
    fd = ::fcntl(made, F_DUPFD_CLOEXEC, 3);
    const int error = errno;
    ::close(made);
    if (fd < 0) throw IoError("netrc", "move a memory file's descriptor", error);
  }
  for (std::size_t written = 0; written < text.size();) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      throw IoError("netrc", "write a memory file for a child's logins", error);
    }
    written += static_cast<std::size_t>(n);
  }
  return fd;
}

// In the forked child: only async-signal-safe calls until exec. On failure the errno goes
// through `report` (close-on-exec, so the parent reads nothing when exec succeeds). `keep_fd`
// (when >= 0) stays open across exec: the child's netrc.
[[noreturn]] void become_child(const char* program, char* const* argv, char* const* envp,
                               const cpu_set_t* cpus, int stdout_fd, int stderr_fd, int file_fd,
                               int keep_fd, int report, pid_t parent) {
  int error = 0;
  // Killed with its parent, however the parent ends. A parent that died before the request
  // took effect left this child to another process: it stops here instead of running alone.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) error = errno;
  if (::getppid() != parent) ::_exit(127);
  if (cpus != nullptr && ::sched_setaffinity(0, sizeof(cpu_set_t), cpus) != 0) error = errno;
  if (error == 0 && file_fd >= 0) {
    if (::dup2(file_fd, 1) < 0 || ::dup2(file_fd, 2) < 0) error = errno;
  }
  if (error == 0 && stdout_fd >= 0 && ::dup2(stdout_fd, 1) < 0) error = errno;
  if (error == 0 && stderr_fd >= 0 && ::dup2(stderr_fd, 2) < 0) error = errno;
  if (error == 0 && keep_fd >= 0 && ::fcntl(keep_fd, F_SETFD, 0) < 0) error = errno;
  if (error == 0) {
    ::execve(program, argv, envp);
    error = errno;
  }
  ssize_t ignored = ::write(report, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

pid_t spawn_process(const std::string& program, const std::vector<std::string>& arguments,
                    const SpawnOptions& options) {
  // Passwords of URLs leave the command line, which every user can read, for a netrc only the
  // child can open (url_passwords.hpp).
  HiddenPasswords hidden = hide_url_passwords(arguments);
  std::vector<std::string> argv_strings{program};
  argv_strings.insert(argv_strings.end(), hidden.arguments.begin(), hidden.arguments.end());
  std::vector<std::string> overrides = options.environment;
  // The versions of remote files this process pinned: the child reads the same ones.
  if (std::string pins = pinned_versions_environment(); !pins.empty()) {
    overrides.insert(overrides.begin(), std::move(pins));
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (const int cpu : options.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      throw IoError(program, "start on CPU " + std::to_string(cpu), EINVAL);
    }
    CPU_SET(cpu, &cpus);
  }
  int netrc_fd = -1;
  if (!hidden.netrc.empty()) {
    netrc_fd = memory_file(hidden.netrc);
    overrides.push_back("NETRC=/proc/self/fd/" + std::to_string(netrc_fd));
  }
  std::vector<std::string> env_strings = environment_with(overrides);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);
  int file_fd = -1;
  if (!options.output_file.empty()) {
    file_fd = ::open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (file_fd < 0) {
      const int error = errno;
      if (netrc_fd >= 0) ::close(netrc_fd);
      throw IoError(options.output_file, "open for the output of " + program, error);
    }
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    if (file_fd >= 0) ::close(file_fd);
    if (netrc_fd >= 0) ::close(netrc_fd);
    throw IoError(program, "create a pipe", error);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    become_child(program.c_str(), argv.data(), envp.data(), options.cpus.empty() ? nullptr : &cpus,
                 options.stdout_fd, options.stderr_fd, file_fd, netrc_fd, report[1], parent);
  }
  const int fork_error = errno;
  ::close(report[1]);
  if (file_fd >= 0) ::close(file_fd);
  if (netrc_fd >= 0) ::close(netrc_fd);
  if (pid < 0) {
    ::close(report[0]);
    throw IoError(program, "start (fork)", fork_error);
  }
  int child_error = 0;
  ssize_t got = 0;
  while ((got = ::read(report[0], &child_error, sizeof child_error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof child_error)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw IoError(program, options.cpus.empty() ? "start" : "start on its CPU set", child_error);
  }
  return pid;
}

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string this_program() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw Error("cannot find this program's path: " + error.message());
  return path.string();
}

}  // namespace ffcv::tools
