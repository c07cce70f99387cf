// `ffcv`: one CLI for the whole project. `ffcv <command> --help` describes each command.
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>

#include "cli/arguments.hpp"
#include "cli/commands.hpp"

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
  };
  return kCommands;
}

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: ffcv <command> [arguments] [options]\n\ncommands:\n");
  for (const auto& [name, command] : commands()) {
    std::fprintf(out, "  %-10s %s\n", name.c_str(), command.summary);
  }
  std::fprintf(out, "\n`ffcv <command> --help` shows a command's arguments and options.\n");
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
    std::fprintf(stderr, "ffcv %s: %s (see ffcv %s --help)\n", argv[1], error.what(), argv[1]);
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ffcv %s: error: %s\n", argv[1], error.what());
    return 1;
  }
}
