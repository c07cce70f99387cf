#include "common/trainer_exec.hpp"

#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/spawn.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {

int run_trainer_command(const std::vector<std::string>& args) {
  const std::filesystem::path trainer =
      std::filesystem::path(this_program()).parent_path() / "ffcv-train";
  if (!std::filesystem::exists(trainer)) {
    throw Error(
        "this build has no trainer: LibTorch was not found when it was configured "
        "(tools/setup.sh installs it into .venv)");
  }
  std::vector<std::string> strings{trainer.string()};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execv(trainer.c_str(), argv.data());
  throw IoError(trainer.string(), "execute", errno);
}

}  // namespace ffcv::tools
