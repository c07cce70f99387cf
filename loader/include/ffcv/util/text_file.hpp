// Reading back the small text files this project writes (run logs, summaries, tables, lists of
// points), where a file that is not there yet means "nothing written yet" rather than an error.
#pragma once

#include <string>

namespace ffcv {

// The whole of `path`, or "" when it does not exist or cannot be read.
std::string read_text_if_present(const std::string& path);

}  // namespace ffcv
