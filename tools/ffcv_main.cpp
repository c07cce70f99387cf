// `ffcv`: one CLI for the whole project. `ffcv <command> --help` describes each command.
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <new>
#include <string>
#include <system_error>

#include "cli/commands.hpp"
#include "common/arguments.hpp"
#include "common/trainer_exec.hpp"
#include "ffcv/storage/url_credentials.hpp"

namespace {

struct Command {
  std::function<int(const ffcv::tools::CommandArgs&)> run;
  const char* summary;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> kCommands = {
      {"write", {ffcv::tools::write_command, "write a .beton dataset from images, IDX or .npy"}},
      {"inspect",
       {ffcv::tools::inspect_command, "describe a .beton file, a sample, or export one"}},
      {"bench", {ffcv::tools::bench_command, "measure the loader's throughput and stage times"}},
      {"doctor", {ffcv::tools::doctor_command, "find the loader's bottleneck and what helps"}},
      {"run", {ffcv::tools::run_trainer_command, "train what a TOML recipe describes"}},
      {"ablate",
       {ffcv::tools::ablate_command, "sweep loader and writer settings, tabulate and plot them"}},
  };
  return kCommands;
}

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: ffcv <command> [arguments] [options]\n\ncommands:\n");
  for (const auto& [name, command] : commands()) {
    std::fprintf(out, "  %-10s %s\n", name.c_str(), command.summary);
  }
  std::fprintf(out, "\n`ffcv <command> --help` shows a command's arguments and options.\n");
  std::fprintf(out,
               "\nA .beton may be an http:// or https:// URL (a server that answers range "
               "requests).\n"
               "  login: ~/.netrc (or $NETRC), or FFCV_HTTP_USER / FFCV_HTTP_PASSWORD; a password "
               "in the URL\n"
               "         is used but never printed or stored\n"
               "  time limits: FFCV_HTTP_CONNECT_TIMEOUT (10 s), FFCV_HTTP_STALL_TIMEOUT (15 s),\n"
               "         FFCV_HTTP_REQUEST_TIMEOUT (300 s), FFCV_HTTP_ATTEMPTS (4); see "
               "docs/operations.md\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const auto it = commands().find(argv[1]);
  if (it == commands().end()) {
    std::fprintf(stderr, "ffcv: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
  }
  const ffcv::tools::CommandArgs args(argv + 2, argv + argc);
  try {
    return it->second.run(args);
  } catch (const ffcv::tools::UsageError& error) {
    std::fprintf(stderr, "ffcv %s: %s (see ffcv %s --help)\n", argv[1],
                 ffcv::redact_url_passwords(error.what()).c_str(), argv[1]);
    return 2;
  } catch (const std::bad_alloc&) {
    const bool loads = it->first == "bench" || it->first == "doctor";
    std::fprintf(stderr, "ffcv %s: error: out of memory%s\n", argv[1],
                 loads ? " (lower --batch-size, --batches-ahead or --cache-budget-mib)" : "");
    return 1;
  } catch (const std::system_error& error) {
    // Thread creation fails with EAGAIN when the process may start no more threads.
    const bool threads = error.code() == std::errc::resource_unavailable_try_again;
    std::fprintf(
        stderr, "ffcv %s: error: %s%s\n", argv[1], error.what(),
        threads ? " (cannot start more threads: lower --num-workers or --cache-readers)" : "");
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ffcv %s: error: %s\n", argv[1],
                 ffcv::redact_url_passwords(error.what()).c_str());
    return 1;
  }
}
