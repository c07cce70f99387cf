// HTTP servers on loopback for the tests of reading .beton files over HTTP:
//
//   nginx              Debian's nginx (unpacked into build/ by tools/setup.sh), serving a folder
//                      with a configuration written here: ranges, ETags, keep-alive, and the
//                      server's own per-request rate limit (limit_rate) to make storage slow.
//                      Its access log records the status, Range header and bytes of each request.
//   http_fault_server  tests/unit/http_fault_server.py serving one file with a chosen fault.
//
// The server runs as a child process for the life of the object, which kills it (SIGKILL) and
// reaps it on destruction.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ffcv/storage/version_pins.hpp"
#include "test_support.hpp"

namespace ffcv::test {

class TestHttpServer {
 public:
  // nginx serving the files of `root`; `limit_rate`: bytes per second per request, 0 unlimited.
  // With `tls`, over HTTPS with a self-signed certificate for 127.0.0.1 made by the openssl
  // command (certificate() names it, for HttpOptions::ca_file).
  static std::unique_ptr<TestHttpServer> nginx(const std::string& root,
                                               std::uint64_t limit_rate = 0, bool tls = false) {
    if (std::string(FFCV_NGINX_PATH).empty()) {
      throw std::runtime_error(
          "nginx is missing: run tools/setup.sh, which unpacks it into build/");
    }
    std::unique_ptr<TestHttpServer> owner(new TestHttpServer);
    TestHttpServer& server = *owner;
    const std::string dir = server.dir_.path();
    std::filesystem::create_directories(dir + "/temp");
    server.port_ = free_port();
    std::string listen = "127.0.0.1:" + std::to_string(server.port_);
    if (tls) {
      server.scheme_ = "https";
      server.certificate_ = dir + "/cert.pem";
      const std::string command =
          "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
          "-addext subjectAltName=IP:127.0.0.1 -keyout " +
          dir + "/key.pem -out " + server.certificate_ + " >" + dir + "/openssl.log 2>&1";
      if (std::system(command.c_str()) != 0) {
        throw std::runtime_error("cannot make a test certificate with openssl (see " + dir +
                                 "/openssl.log)");
      }
      listen += " ssl;\n    ssl_certificate " + server.certificate_ +
                ";\n    ssl_certificate_key " + dir + "/key.pem";
    }
    std::ofstream(dir + "/nginx.conf")
        << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
        << "error_log " << dir << "/error.log;\npid " << dir << "/nginx.pid;\n"
        << "events { worker_connections 512; }\n"
        << "http {\n"
        << "  log_format ranges '$status \"$http_range\" $body_bytes_sent';\n"
        << "  access_log " << dir << "/access.log ranges;\n"
        << "  client_body_temp_path " << dir << "/temp/body;\n"
        << "  proxy_temp_path " << dir << "/temp/proxy;\n"
        << "  fastcgi_temp_path " << dir << "/temp/fastcgi;\n"
        << "  uwsgi_temp_path " << dir << "/temp/uwsgi;\n"
        << "  scgi_temp_path " << dir << "/temp/scgi;\n"
        << "  default_type application/octet-stream;\n"
        << "  keepalive_requests 100000;\n"
        << "  server {\n"
        << "    listen " << listen << ";\n"
        << "    root " << root << ";\n"
        << "    limit_rate " << limit_rate << ";\n"
        << "  }\n"
        << "}\n";
    server.start({FFCV_NGINX_PATH, "-p", dir, "-c", dir + "/nginx.conf", "-e", dir + "/error.log"},
                 dir + "/error.log");
    server.access_log_ = dir + "/access.log";
    return owner;
  }

  // tests/unit/http_fault_server.py serving `file` with `mode` (see that script); `other`: the
  // file a swap mode serves instead.
  static std::unique_ptr<TestHttpServer> faulty(const std::string& file, const std::string& mode,
                                                const std::string& other = "") {
    std::unique_ptr<TestHttpServer> owner(new TestHttpServer);
    TestHttpServer& server = *owner;
    const std::string port_file = server.dir_.file("port");
    const std::string log = server.dir_.file("server.log");
    std::vector<std::string> argv{"/usr/bin/python3",
                                  FFCV_SOURCE_DIR "/tests/unit/http_fault_server.py", file, mode,
                                  port_file};
    if (!other.empty()) argv.push_back(other);
    server.start(argv, log, port_file);
    return owner;
  }

  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;
  ~TestHttpServer() { stop(); }

  // http://127.0.0.1:PORT/NAME (https:// with TLS)
  std::string url(const std::string& name) const {
    return scheme_ + "://127.0.0.1:" + std::to_string(port_) + "/" + name;
  }

  // The self-signed certificate of a TLS server.
  const std::string& certificate() const { return certificate_; }

  // nginx: one line per request so far, "STATUS "RANGE" BYTES".
  std::vector<std::string> access_log() const {
    std::vector<std::string> lines;
    std::ifstream in(access_log_);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // The access log once no line is still coming: nginx writes a request's line after sending
  // the response, so a request the client already finished can appear a moment later (longer
  // on a busy machine). Waits until the log has not grown for `quiet`.
  std::vector<std::string> settled_access_log(
      std::chrono::milliseconds quiet = std::chrono::milliseconds(150)) const {
    std::vector<std::string> lines = access_log();
    for (;;) {
      std::this_thread::sleep_for(quiet);
      std::vector<std::string> again = access_log();
      if (again.size() == lines.size()) return again;
      lines = std::move(again);
    }
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  TestHttpServer() = default;

  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
  }

  static bool accepts_connections(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return ok;
  }

  // Starts `argv` with stdout and stderr to `log`, and waits (up to 20 s) until it listens: on
  // port_, or on the port it writes into `port_file`.
  void start(const std::vector<std::string>& argv, const std::string& log,
             const std::string& port_file = "") {
    // A new server may reuse an earlier one's port: what this process pinned for those URLs
    // (version_pins.hpp) was another file.
    forget_pinned_versions();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!port_file.empty() && port_ == 0) {
        std::ifstream in(port_file);
        in >> port_;
      }
      if (port_ != 0 && accepts_connections(port_)) return;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    stop();
    throw std::runtime_error("the test HTTP server (" + argv[0] +
                             ") did not start listening: " + text.str());
  }

  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string access_log_;
  std::string scheme_ = "http";
  std::string certificate_;
};

}  // namespace ffcv::test
