// The learning-rate and training-resolution schedules of FFCV's ImageNet recipes.
//
// Both reproduce train_imagenet.py to the last rounding decision, because the paper's accuracy
// figures depend on them: the learning rate is interpolated per iteration between values at
// epoch boundaries, and the resolution ramp is rounded half to even as NumPy does.
// docs/recipes.md writes the formulas out.
#pragma once

#include <cstdint>

#include "ffcv/train/recipe.hpp"

namespace ffcv::train {

// The learning rate at the start of epoch `epoch` (may be fractional), for a run of `epochs`:
//   triangular: piecewise-linear through (0, start_factor*lr), (peak_epoch, lr), (epochs, 0),
//               as np.interp (constant 0 from `epochs` on);
//   step:       lr * step_ratio^floor(epoch / step_length), and 0 from `epochs` on.
double lr_at_epoch(const LrConfig& lr, int epochs, double epoch);

// The learning rate of iteration `iteration` (0-based) of epoch `epoch`, FFCV's per-iteration
// rule: lr(e) + (lr(e+1) - lr(e)) * iteration / iters_per_epoch with lr() = lr_at_epoch.
// So the first iteration of a triangular run uses start_factor*lr, and the last iteration of
// the run uses lr(E-1)/iters_per_epoch, not 0. For step schedules the same rule makes the LR
// ramp down during the epoch before each step, as in FFCV. iters_per_epoch 0 counts as 1.
double lr_at_iteration(const LrConfig& lr, int epochs, std::uint64_t epoch, std::uint64_t iteration,
                       std::uint64_t iters_per_epoch);

// The same rule at a fractional epoch t = e + f (e = floor(t), 0 <= f < 1):
// lr(e) + (lr(e+1) - lr(e)) * f. For a triangular schedule whose peak_epoch is an integer this
// is the piecewise-linear function of t; with a fractional peak it is not (the peak value itself
// is never used), which is what FFCV does too.
double lr_at(const LrConfig& lr, int epochs, double fractional_epoch);

// The training image side for epoch `epoch` (0-based):
//   min_res while epoch <= start_ramp, max_res once epoch >= end_ramp, and in between the
//   linear interpolation rounded half to even to a multiple of round_to.
// Half to even matches np.round: 176 px with round_to 32 is 5.5 steps and gives 192, while
// 144 px (4.5 steps) gives 128, where std::round would give 160.
int resolution_at(const ResolutionConfig& resolution, std::uint64_t epoch);

}  // namespace ffcv::train
