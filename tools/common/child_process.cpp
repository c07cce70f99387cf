#include "common/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "common/interrupt_watch.hpp"
#include "common/spawn.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {

ChildResult run_child(const std::string& program, const std::vector<std::string>& arguments) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw IoError(program, "create a pipe", errno);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw IoError(program, "create a pipe", error);
  }
  InterruptWatch watch;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  try {
    pid = spawn_process(program, arguments, SpawnOptions{{}, {}, out_pipe[1], err_pipe[1], ""});
  } catch (const IoError&) {
    for (const int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw;
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  ChildResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.output, &result.errors};
  int open_pipes = 2;
  bool stopping = false;
  char buffer[65536];
  while (open_pipes > 0) {
    if (!stopping && watch.signal() != 0) {
      ::kill(pid, SIGTERM);
      stopping = true;
      result.interrupted = true;
    }
    if (::poll(fds, 2, 200) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const pollfd& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.status = exit_status(status);
  result.peak_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  result.storage_read_bytes = static_cast<std::uint64_t>(usage.ru_inblock) * 512;
  result.interrupted = result.interrupted || watch.signal() != 0;
  return result;
}

std::string run_plot_script(const std::string& python, const std::string& script,
                            const std::string& data_file) {
  if (python.empty() || ::access(python.c_str(), X_OK) != 0) {
    return "no plots: no Python found (tools/setup.sh makes .venv with matplotlib)";
  }
  const ChildResult child = run_child(python, {script, data_file});
  if (child.status != 0) return "no plots: " + last_line(child.errors + child.output);
  return last_line(child.output);
}

std::string error_line(const ChildResult& child) {
  std::size_t begin = 0;
  while (begin < child.errors.size()) {
    std::size_t end = child.errors.find('\n', begin);
    if (end == std::string::npos) end = child.errors.size();
    const std::string line = child.errors.substr(begin, end - begin);
    if (line.find("error:") != std::string::npos) return last_line(line);
    begin = end + 1;
  }
  const std::string errors = last_line(child.errors);
  return errors.empty() ? last_line(child.output) : errors;
}

std::string last_line(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0) {
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' ')) {
      --end;
    }
    const std::size_t start = text.rfind('\n', end == 0 ? 0 : end - 1);
    const std::size_t begin = start == std::string::npos ? 0 : start + 1;
    if (end > begin) return text.substr(begin, end - begin);
    if (begin == 0) break;
    end = begin;
  }
  return "";
}

}  // namespace ffcv::tools
