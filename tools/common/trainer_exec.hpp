// `ffcv run` in the main program: the trainer lives in its own program, ffcv-train (linked with
// LibTorch), installed beside `ffcv`, so that the other commands start without loading LibTorch.
#pragma once

#include <string>
#include <vector>

namespace ffcv::tools {

// Executes ffcv-train with `args` (the command line after `ffcv run`); returns only by throwing:
// Error when this build has no trainer, IoError when it cannot be executed.
int run_trainer_command(const std::vector<std::string>& args);

}  // namespace ffcv::tools
