// The recipe a checkpoint was saved with (checkpoint.hpp keeps the resolved recipe's text in
// every checkpoint), read before a run resumes from it, so that a resume with another recipe is
// refused before anything is built or written (resume_check.hpp).
#pragma once

#include <string>

namespace ffcv::train {

// The recipe text saved in the checkpoint at `path`, or "" for a checkpoint saved without one.
// Throws ConfigError naming the file when it cannot be read as a checkpoint.
std::string read_checkpoint_recipe(const std::string& path);

}  // namespace ffcv::train
