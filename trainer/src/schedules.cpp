#include "ffcv/train/schedules.hpp"

#include <cmath>
#include <cstddef>

namespace ffcv::train {
namespace {

// np.interp for increasing (possibly repeated) xs: constant beyond both ends, the right-most
// segment whose start is <= x, an exact knot returns its y, and the same operation order as
// NumPy (slope * (x - x0) + y0) so that results agree to the last bit.
template <std::size_t N>
double interp(double x, const double (&xs)[N], const double (&ys)[N]) {
  if (x >= xs[N - 1]) return ys[N - 1];
  if (x < xs[0]) return ys[0];
  std::size_t j = 0;
  while (j + 2 < N && xs[j + 1] <= x) ++j;
  if (x == xs[j]) return ys[j];
  const double slope = (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j]);
  return slope * (x - xs[j]) + ys[j];
}

}  // namespace

double lr_at_epoch(const LrConfig& lr, int epochs, double epoch) {
  if (lr.schedule == "step") {
    if (epoch >= epochs) return 0.0;
    const double steps = std::floor(epoch / lr.step_length);
    return std::pow(lr.step_ratio, steps) * lr.lr;
  }
  const double xs[] = {0.0, lr.peak_epoch, static_cast<double>(epochs)};
  const double ys[] = {lr.start_factor * lr.lr, lr.lr, 0.0};
  return interp(epoch, xs, ys);
}

double lr_at_iteration(const LrConfig& lr, int epochs, std::uint64_t epoch, std::uint64_t iteration,
                       std::uint64_t iters_per_epoch) {
  const double iters = static_cast<double>(iters_per_epoch == 0 ? 1 : iters_per_epoch);
  const double start = lr_at_epoch(lr, epochs, static_cast<double>(epoch));
  const double end = lr_at_epoch(lr, epochs, static_cast<double>(epoch + 1));
  // np.interp(np.arange(iters), [0, iters], [start, end]), element `iteration`.
  const double xs[] = {0.0, iters};
  const double ys[] = {start, end};
  return interp(static_cast<double>(iteration), xs, ys);
}

double lr_at(const LrConfig& lr, int epochs, double fractional_epoch) {
  const double epoch = std::floor(fractional_epoch);
  const double start = lr_at_epoch(lr, epochs, epoch);
  const double end = lr_at_epoch(lr, epochs, epoch + 1);
  return start + (end - start) * (fractional_epoch - epoch);
}

int resolution_at(const ResolutionConfig& resolution, std::uint64_t epoch) {
  const double e = static_cast<double>(epoch);
  if (e <= resolution.start_ramp) return resolution.min_res;
  if (e >= resolution.end_ramp) return resolution.max_res;
  const double xs[] = {static_cast<double>(resolution.start_ramp),
                       static_cast<double>(resolution.end_ramp)};
  const double ys[] = {static_cast<double>(resolution.min_res),
                       static_cast<double>(resolution.max_res)};
  const double steps = interp(e, xs, ys) / resolution.round_to;
  // std::round sends halves away from zero; NumPy's np.round sends them to the even neighbour,
  // and std::nearbyint does the same in the default rounding mode (FE_TONEAREST), which the
  // program never changes.
  return static_cast<int>(std::nearbyint(steps)) * resolution.round_to;
}

}  // namespace ffcv::train
