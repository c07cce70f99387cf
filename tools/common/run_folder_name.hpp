// The names of the folders `ffcv run` makes when no --output-dir is given: a run's
// (logging.folder/NAME-DATE-TIME) and a grid's (logging.folder/NAME-grid-DATE-TIME).
#pragma once

#include <string>

namespace ffcv::tools {

// "YYYYMMDD-HHMMSS", local time: the suffix of new run and grid folders.
std::string run_stamp();

// FOLDER/NAME-YYYYMMDD-HHMMSS, with -2, -3, ... when that exists already.
std::string new_run_dir(const std::string& folder, const std::string& name);

}  // namespace ffcv::tools
