// The selection rules of saga_path.hpp, shared by both paths.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ffcv/saga/saga_path.hpp"

namespace ffcv::saga {

double standard_error(double sum, double squares, double n) {
  if (n < 2) return 0.0;
  const double mean = sum / n;
  // The sample variance, from the two sums (clamped: rounding may leave it a hair below 0).
  const double variance = std::max(0.0, (squares - n * mean * mean) / (n - 1));
  return std::sqrt(variance / n);
}

std::size_t select_point(const std::vector<Candidate>& candidates, const std::string& rule) {
  if (candidates.empty()) throw std::logic_error("select_point: no path points");
  const auto score = [&](const Candidate& c) {
    return rule == "penalized_val_loss" ? c.val_objective : c.val_loss;
  };
  // `a` is preferred to `b` at equal scores when its λ is larger (the sparser model).
  const auto better = [&](std::size_t a, std::size_t b, double score_a, double score_b) {
    return score_a < score_b || (score_a == score_b && candidates[a].lambda > candidates[b].lambda);
  };
  const std::size_t none = candidates.size();
  std::size_t best = none;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (std::isnan(score(candidates[i]))) continue;
    if (best == none || better(i, best, score(candidates[i]), score(candidates[best]))) best = i;
  }
  if (best == none) return candidates.size() - 1;  // no validation rows
  if (rule != "one_se") return best;
  // The largest λ whose validation loss is within one standard error of the least.
  const double limit = candidates[best].val_loss + candidates[best].val_se;
  std::size_t chosen = best;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].val_loss <= limit && candidates[i].lambda > candidates[chosen].lambda) {
      chosen = i;
    }
  }
  return chosen;
}

}  // namespace ffcv::saga
