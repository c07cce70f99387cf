// Output checks made before any work: a command's output never destroys one of its inputs or a
// file of another kind.
//
// Every command that writes a file (write, inspect --export) or a folder (run's run folder, the
// imagenet-like tree) states what it reads and what it may replace; check_output() refuses,
// with a UsageError naming both paths:
//  - an output that is one of the inputs (the same file, also through links or other spellings);
//  - an output inside an input folder (for an image folder: inside its class folders, the part
//    the source reads; a file at its top level is allowed);
//  - an existing file of another kind (a JPEG where a .beton is expected), unless `force`;
//  - a path that names a directory.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ffcv/format/beton_file.hpp"  // is_beton_file, the rule for a .beton output

namespace ffcv::tools {

struct InputFolder {
  std::string path;
  bool top_level_allowed = false;  // true: files directly in it are not read (image folders)
};

struct OutputRules {
  std::string option = "--output";  // how the command line names the output, for messages
  std::vector<std::string> input_files;
  std::vector<InputFolder> input_folders;
  // What an existing output must be to be replaced without `force`, e.g. is_beton_file.
  std::function<bool(const std::string&)> replaceable;
  std::string replaceable_kind = "a .beton file";  // for messages
  bool force = false;
};

// Throws UsageError when `output` breaks one of the rules.
void check_output(const std::string& output, const OutputRules& rules);

}  // namespace ffcv::tools
