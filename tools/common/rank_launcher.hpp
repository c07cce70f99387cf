// Starting the ranks of a data-parallel job on this machine (what torchrun does for PyTorch).
#pragma once

#include <string>
#include <vector>

#include "common/spawn.hpp"  // this_program(): what launch_ranks starts again

namespace ffcv::tools {

// Runs `nproc` copies of `program` with `arguments` as ranks 0..nproc-1 of one job: each gets
// RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR (127.0.0.1 unless set) and
// MASTER_PORT (a free port unless set). SIGINT and SIGTERM sent to the launcher are passed on.
// When a rank fails, the others get SIGTERM, then SIGKILL after `grace_seconds`. Returns 0 when
// every rank succeeded, else the first failing rank's status (128 + signal when killed).
// Throws ConfigError for nproc < 1 (callers bound it as a command-line option).
int launch_ranks(const std::string& program, const std::vector<std::string>& arguments, int nproc,
                 double grace_seconds = 20.0);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_local_port();

}  // namespace ffcv::tools
