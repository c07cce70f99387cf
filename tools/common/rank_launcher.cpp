#include "common/rank_launcher.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/interrupt_watch.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw IoError("socket", "create", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError("127.0.0.1", "bind a free port", error);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

int launch_ranks(const std::string& program, const std::vector<std::string>& arguments, int nproc,
                 double grace_seconds) {
  if (nproc < 1) throw ConfigError("cannot start " + std::to_string(nproc) + " ranks");
  const char* address = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const std::string master_address = address && *address ? address : "127.0.0.1";
  const std::string master_port =
      port && *port ? std::string(port) : std::to_string(free_local_port());

  InterruptWatch watch;

  std::vector<pid_t> children;
  for (int rank = 0; rank < nproc; ++rank) {
    const std::vector<std::string> env = {
        "RANK=" + std::to_string(rank),        "LOCAL_RANK=" + std::to_string(rank),
        "WORLD_SIZE=" + std::to_string(nproc), "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
        "MASTER_ADDR=" + master_address,       "MASTER_PORT=" + master_port,
    };
    pid_t pid = 0;
    try {
      pid = spawn_process(program, arguments, SpawnOptions{env, {}, -1, -1, ""});
    } catch (const IoError&) {
      for (pid_t child : children) ::kill(child, SIGKILL);
      for (pid_t child : children) ::waitpid(child, nullptr, 0);
      throw;
    }
    children.push_back(pid);
  }

  int result = 0;
  std::size_t running = children.size();
  bool terminating = false;
  auto terminate_deadline = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    if (const int signal = watch.take(); signal != 0) {
      for (pid_t child : children) {
        if (child > 0) ::kill(child, signal);
      }
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (pid_t& child : children) {
        if (child != pid) continue;
        child = -1;
        --running;
        const int code = exit_status(status);
        if (code != 0 && result == 0) {
          result = code;
          if (!terminating && running > 0) {
            std::fprintf(stderr, "ffcv run: a rank failed (status %d); stopping the others\n",
                         code);
            for (pid_t other : children) {
              if (other > 0) ::kill(other, SIGTERM);
            }
            terminating = true;
            terminate_deadline = std::chrono::steady_clock::now() +
                                 std::chrono::milliseconds(static_cast<long>(grace_seconds * 1000));
          }
        }
      }
      continue;
    }
    if (terminating && std::chrono::steady_clock::now() > terminate_deadline) {
      for (pid_t other : children) {
        if (other > 0) ::kill(other, SIGKILL);
      }
      terminate_deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return result;
}

}  // namespace ffcv::tools
