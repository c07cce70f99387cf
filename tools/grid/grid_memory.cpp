#include "grid/grid_memory.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>

#include "ffcv/util/byte_size.hpp"

namespace ffcv::tools {
namespace {

// The ResNet of `model` at input side `side`, layer by layer as resnet.hpp builds it: its
// parameters, and the elements of every convolution's output for one image.
struct ResNetShape {
  double parameters = 0;
  double conv_output_elements = 0;
};

ResNetShape resnet_shape(const train::ModelConfig& model, double side) {
  const bool bottleneck = model.arch == "resnet50";
  const std::array<int, 4> depths =
      bottleneck ? std::array<int, 4>{3, 4, 6, 3} : std::array<int, 4>{2, 2, 2, 2};
  const double expansion = bottleneck ? 4 : 1;
  const auto scaled = [&](double planes) {
    return std::max(1.0, static_cast<double>(std::llround(planes * model.width)));
  };
  ResNetShape shape;
  double h = side;
  // A convolution with its BatchNorm: weights, scale and shift, and its output at side `h`.
  const auto conv_bn = [&](double in, double out, double kernel) {
    shape.parameters += in * out * kernel * kernel + 2 * out;
    shape.conv_output_elements += out * h * h;
  };
  const auto halve = [](double side_in) { return std::ceil(side_in / 2); };

  const double stem = scaled(64);
  if (model.stem == "imagenet") {
    h = halve(h);  // 7x7, stride 2
    conv_bn(3, stem, 7);
    h = halve(h);  // 3x3 max-pool, stride 2
  } else {
    conv_bn(3, stem, 3);
  }
  double in = stem;
  for (int stage = 0; stage < 4; ++stage) {
    const double planes = scaled(64.0 * (1 << stage));
    for (int block = 0; block < depths[static_cast<std::size_t>(stage)]; ++block) {
      const bool strided = stage > 0 && block == 0;
      const double out = planes * expansion;
      if (bottleneck) {
        conv_bn(in, planes, 1);
        if (strided) h = halve(h);
        conv_bn(planes, planes, 3);
        conv_bn(planes, out, 1);
      } else {
        if (strided) h = halve(h);
        conv_bn(in, planes, 3);
        conv_bn(planes, planes, 3);
      }
      if (strided || in != out) conv_bn(in, out, 1);  // the downsample path, at the output side
      in = out;
    }
  }
  shape.parameters += in * model.num_classes + model.num_classes;
  return shape;
}

// The estimated memory of a grid's units (shared groups, or points on their own) run at once.
class UnitPeaks {
 public:
  // `processes`: every unit is a process of its own (with kProcessBytes each).
  UnitPeaks(const std::vector<PointMemory>& points, std::vector<std::vector<std::size_t>> units,
            bool processes)
      : points_(points), units_(std::move(units)), processes_(processes) {}

  const std::vector<std::vector<std::size_t>>& units() const { return units_; }

  // The peak with `count` units at once: the largest ones together.
  double peak(int count, std::size_t per_group) const {
    const std::vector<double> costs = unit_costs(per_group);
    double total = processes_ ? 0 : kProcessBytes;
    for (std::size_t k = 0; k < costs.size() && k < static_cast<std::size_t>(count); ++k) {
      total += costs[k];
    }
    return total;
  }

 private:
  // The cost of each unit, largest first, when a shared group builds at most `per_group` models
  // at once (its models then train in turns of that many, each turn with its own loader).
  std::vector<double> unit_costs(std::size_t per_group) const {
    std::vector<double> costs;
    for (const std::vector<std::size_t>& unit : units_) {
      double model = 0, loader = 0;
      for (const std::size_t i : unit) {
        model = std::max(model, points_[i].host_model_bytes());
        loader = std::max(loader, points_[i].loader);
      }
      for (std::size_t left = unit.size(); left > 0;) {
        const std::size_t chunk = per_group == 0 ? left : std::min(left, per_group);
        costs.push_back(loader + static_cast<double>(chunk) * model +
                        (processes_ ? kProcessBytes : 0));
        left -= chunk;
      }
    }
    std::sort(costs.begin(), costs.end(), std::greater<>());
    return costs;
  }

  const std::vector<PointMemory>& points_;
  std::vector<std::vector<std::size_t>> units_;
  bool processes_;
};

// The most models per turn (at most `largest`, at least 1) with which one group at a time fits
// `available`; one model per turn must fit.
std::size_t most_models_per_turn(const UnitPeaks& peaks, std::size_t largest, double available) {
  std::size_t lo = 1, hi = largest;  // the answer lies in [1, hi]
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (peaks.peak(1, mid) <= available) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace

std::uint64_t resnet_parameter_count(const train::ModelConfig& model) {
  return static_cast<std::uint64_t>(resnet_shape(model, 1).parameters);
}

PointMemory estimate_point_memory(const train::Recipe& recipe, bool on_gpu,
                                  const DataSamples& samples) {
  PointMemory memory;
  memory.on_gpu = on_gpu;
  const train::ModelConfig& model = recipe.model;
  const double parameters = resnet_shape(model, 1).parameters;
  memory.model = 16 * parameters;

  const bool half = recipe.training.precision != "fp32";
  const double element = half ? 2 : 4;
  const double train_side = std::max(recipe.resolution.max_res, recipe.resolution.min_res);
  const double train_batch = recipe.training.batch_size;
  // Training keeps about three tensors per convolution output (its output, the BatchNorm's, the
  // ReLU's) until the backward pass, and the fp32 input.
  const double train_activations =
      train_batch * (3 * element * resnet_shape(model, train_side).conv_output_elements +
                     4 * 3 * train_side * train_side);
  // Evaluation keeps no graph: about two outputs alive at once, and the input (with TTA, its
  // flipped copy too).
  const double val_side = recipe.validation.resolution;
  const double val_batch = recipe.validation.batch_size;
  const double val_inputs = recipe.validation.tta ? 2 : 1;
  // The largest output is the stem's (ResNet-50's first stage, 4x wider at half the side, is
  // as large).
  const double stem_channels = std::max(1.0, static_cast<double>(std::llround(64 * model.width)));
  const double stem_side = model.stem == "imagenet" ? std::ceil(val_side / 2) : val_side;
  const double largest_output = stem_channels * stem_side * stem_side;
  const double val_activations =
      val_batch * (2 * element * largest_output + val_inputs * 4 * 3 * val_side * val_side);
  memory.activations = std::max(train_activations, val_activations);

  const double slots = recipe.data.batches_ahead + 2.0;
  memory.loader = slots * (train_batch * 3 * train_side * train_side +
                           recipe.validation.batch_size * 3 * val_side * val_side);
  if (!recipe.data.os_cache) memory.loader += 2.0 * recipe.data.cache_budget_mib * (1 << 20);
  memory.loader += kTableBytesPerSample *
                   (static_cast<double>(samples.train) + static_cast<double>(samples.val));
  return memory;
}

GridMemoryPlan plan_grid_memory(const std::string& placement, int at_once,
                                const std::vector<PointMemory>& points,
                                const std::vector<std::vector<std::size_t>>& groups,
                                double available, int cores) {
  GridMemoryPlan plan;
  plan.available = available;
  plan.budget = kGridMemoryFraction * available;
  plan.cores = std::max(1, cores);
  if (points.empty()) return plan;
  const bool processes = placement == "processes" || placement == "sequential";
  const bool shared = placement == "shared";
  std::vector<std::vector<std::size_t>> units;
  if (shared) {
    units = groups;
  } else {
    for (std::size_t i = 0; i < points.size(); ++i) units.push_back({i});
  }
  const UnitPeaks peaks(points, std::move(units), processes);
  const int units_count = static_cast<int>(peaks.units().size());
  plan.units = units_count;
  int asked = 1;
  if (placement != "sequential") {
    if (at_once <= 0) {
      // The default: one per core at most. More would take turns on the cores, each holding its
      // memory meanwhile.
      asked = std::min(units_count, plan.cores);
      plan.by_cores = units_count > plan.cores;
    } else {
      asked = std::min(at_once, units_count);
    }
  }
  plan.asked = asked;
  plan.requested = peaks.peak(asked, 0);
  plan.at_once = asked;
  plan.needed = plan.requested;
  if (plan.requested <= plan.budget) return plan;
  plan.by_memory = true;
  // Fewer at once, groups whole.
  for (int count = asked - 1; count >= 1; --count) {
    if (peaks.peak(count, 0) <= plan.budget) {
      plan.at_once = count;
      plan.needed = peaks.peak(count, 0);
      return plan;
    }
  }
  plan.at_once = 1;
  // One group at a time, in turns of as many models as fit.
  std::size_t largest = 0;
  for (const auto& unit : peaks.units()) largest = std::max(largest, unit.size());
  if (shared && largest > 1 && peaks.peak(1, 1) <= plan.budget) {
    const std::size_t per_turn = most_models_per_turn(peaks, largest, plan.budget);
    plan.models_per_group = static_cast<int>(per_turn);
    plan.needed = peaks.peak(1, per_turn);
    return plan;
  }
  // Not even that within the budget: one at a time (one model per turn), when it fits what is
  // available at all.
  if (shared && largest > 1) plan.models_per_group = 1;
  plan.needed = peaks.peak(1, plan.models_per_group > 0 ? 1 : 0);
  plan.fits = plan.needed <= available;
  return plan;
}

std::string grid_plan_line(const GridMemoryPlan& plan, const std::string& placement) {
  const bool shared = placement == "shared";
  const std::string what =
      shared ? (plan.units == 1 ? " group" : " groups") : (plan.units == 1 ? " point" : " points");
  std::string line = "grid: plan: " + std::to_string(plan.at_once) + " of " +
                     std::to_string(plan.units) + what + " at once";
  std::vector<std::string> limits;
  if (plan.by_cores) limits.push_back("at most one per core: " + std::to_string(plan.cores));
  if (plan.by_memory) {
    limits.push_back("memory: " + std::to_string(plan.asked) + " at once would need about " +
                     byte_size_text(plan.requested));
  }
  if (!limits.empty()) {
    line += " (";
    for (std::size_t i = 0; i < limits.size(); ++i) line += (i ? "; " : "") + limits[i];
    line += ")";
  }
  if (plan.models_per_group > 0) {
    line += ", a group's models in turns of " + std::to_string(plan.models_per_group);
  }
  if (!std::isfinite(plan.available)) return line + "; the memory available is not known";
  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", 100 * kGridMemoryFraction);
  return line + "; about " + byte_size_text(plan.needed) + " of memory, planned within " +
         byte_size_text(plan.budget) + " (" + share + " of the " + byte_size_text(plan.available) +
         " available; the rest is left to the page cache and the rest of the machine)";
}

}  // namespace ffcv::tools
