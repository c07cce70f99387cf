// `ffcv run`: the trainer's command. It lives in its own program, ffcv-train (linked with
// LibTorch), which `ffcv run` executes, so the other commands start without loading LibTorch.
#pragma once

#include "cli/commands.hpp"

namespace ffcv::tools {

int run_command(const CommandArgs& args);

}  // namespace ffcv::tools
