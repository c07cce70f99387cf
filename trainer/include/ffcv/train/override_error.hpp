// An override given as `--set section.key=value` that the recipe refuses: no such key, a value
// of the wrong type, an unknown choice, a number out of its range.
//
// apply_recipe_override (recipe_schema.hpp) raises it, so that a command line can tell its own
// bad argument (a bad command line: exit status 2) from an error in the recipe file (exit
// status 1). Rules between keys (checked once every override is applied) stay ConfigErrors: the
// recipe as a whole is at fault there, not one argument.
#pragma once

#include "ffcv/util/errors.hpp"

namespace ffcv::train {

class OverrideError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

}  // namespace ffcv::train
