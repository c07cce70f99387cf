// Running another program to completion and measuring it: its output, its exit status, its
// wall time, its peak memory and the bytes it read from storage, as the kernel counted them.
//
// Used by `ffcv ablate`, which runs each measurement in a process of its own so that one cell's
// memory and page cache use do not leak into the next. SIGINT and SIGTERM received while the
// child runs stop the child (SIGTERM) and are reported in `interrupted`; the caller decides what
// to do (ablate keeps what finished and exits 130).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ffcv::tools {

struct ChildResult {
  int status = 0;                        // exit status; 128 + N when killed by signal N
  std::string output;                    // what it wrote to stdout
  std::string errors;                    // what it wrote to stderr
  double seconds = 0;                    // wall time
  std::uint64_t peak_rss_bytes = 0;      // its largest resident set (getrusage ru_maxrss)
  std::uint64_t storage_read_bytes = 0;  // bytes it read from block devices (ru_inblock)
  bool interrupted = false;              // SIGINT or SIGTERM arrived while it ran
};

// Runs `program` with `arguments` (not through a shell). Throws IoError when it cannot start.
ChildResult run_child(const std::string& program, const std::vector<std::string>& arguments);

// Runs a plotting script with the project's Python: `python script data_file`. Returns the line
// to print: the script's last line (the plots written), or why there are none (no Python with
// matplotlib, or the script's error).
std::string run_plot_script(const std::string& python, const std::string& script,
                            const std::string& data_file);

// The last non-empty line of `text`, for one-line error messages.
std::string last_line(const std::string& text);

// Why a child that failed failed, in one line: the first line of its stderr that reports an error
// ("ffcv run: error: ..."), else the last line of its stderr (a refused command line), else the
// last line of its stdout; "" when it printed nothing. Not the last line of all it printed: a
// run's stdout ends with its folder ("output: DIR"), which says nothing of the error.
std::string error_line(const ChildResult& child);

}  // namespace ffcv::tools
