// Starting another program: the one place where this project forks, so that every child
// (ranks of `ffcv run --nproc`, the measurements of `ffcv ablate`, the points of a grid) starts
// the same way.
//
// A URL's password never appears on a child's command line, which every user of the machine
// can read: the child gets the URL without it and the password in a netrc that only it can open
// (NETRC=/proc/self/fd/N, an anonymous memory file it inherits; url_passwords.hpp).
//
// The child gets the parent's environment with some variables replaced, optionally its own CPU
// affinity, set between fork and exec so that the child never runs a single instruction of its
// program on other cores (its thread pools size themselves from the mask, cpu_count.hpp), and
// optionally its stdout and stderr redirected to descriptors or appended to a file.
//
// Children die with their parent. Each child asks the kernel for SIGKILL when its parent ends
// (PR_SET_PDEATHSIG, checked against a parent that died in between), so that `kill -9` of a
// grid, an ablation or a rank launcher takes its points, measurements, ranks and plotting child
// with it instead of leaving them training or holding memory. Children stay in the caller's
// process group: Ctrl-C at a terminal, or a signal to the group, reaches all of them. The signal
// follows the thread that forked, so spawn_process is called from a thread that lives as long as
// the child should (every caller here uses its main thread).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ffcv::tools {

struct SpawnOptions {
  std::vector<std::string> environment;  // NAME=VALUE, replacing same-named variables
  std::vector<int> cpus;                 // the child's CPU affinity; empty: the parent's
  int stdout_fd = -1;                    // duplicated onto the child's stdout when >= 0
  int stderr_fd = -1;                    // duplicated onto the child's stderr when >= 0
  std::string output_file;               // when not empty: stdout and stderr appended here
};

// Starts `program` with `arguments` (not through a shell). Returns its pid; throws IoError
// naming the program when it cannot start (not found, not executable, a bad CPU set).
pid_t spawn_process(const std::string& program, const std::vector<std::string>& arguments,
                    const SpawnOptions& options = {});

// A waitpid status as a shell reports it: the exit code, or 128 + N when killed by signal N.
int exit_status(int wait_status);

// The path of the running executable.
std::string this_program();

}  // namespace ffcv::tools
