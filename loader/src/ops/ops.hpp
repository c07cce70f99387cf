// Internal: factories of the built-in operations, registered by builtin_steps.cpp.
#pragma once

#include <memory>

#include "ffcv/op_params.hpp"
#include "ffcv/operation.hpp"

namespace ffcv {

std::shared_ptr<Operation> make_random_horizontal_flip(const OpParams& params);

}  // namespace ffcv
