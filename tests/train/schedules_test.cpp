// LR and resolution schedules against the figures of FFCV's own ImageNet runs.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>

#include "ffcv/train/recipe.hpp"
#include "ffcv/train/schedules.hpp"

namespace ffcv::train {
namespace {

// RN-50 on 8 GPUs: peak 1.7 at epoch 2 of 16, 312 iterations per epoch.
LrConfig rn50_lr() {
  LrConfig lr;
  lr.lr = 1.7;
  lr.peak_epoch = 2;
  return lr;
}
constexpr int kEpochs = 16;
constexpr std::uint64_t kIters = 312;

ResolutionConfig imagenet_ramp(int epochs) {
  ResolutionConfig res;
  res.min_res = 160;
  res.max_res = 192;
  res.start_ramp = 3 * epochs / 4 - 1;
  res.end_ramp = 7 * epochs / 8 - 1;
  return res;
}

int first_epoch_at(const ResolutionConfig& res, int epochs, int side) {
  for (int e = 0; e < epochs; ++e) {
    if (resolution_at(res, static_cast<std::uint64_t>(e)) == side) return e;
  }
  return -1;
}

}  // namespace

TEST_CASE("the LR logged by FFCV's RN-50 run is the last iteration's", "[schedule]") {
  // agg.csv logs current_lr after each epoch: the value used by iteration iters-1.
  const LrConfig lr = rn50_lr();
  CHECK(lr_at_iteration(lr, kEpochs, 0, kIters - 1, kIters) == Approx(0.847361).margin(5e-7));
  CHECK(lr_at_iteration(lr, kEpochs, 1, kIters - 1, kIters) == Approx(1.697276).margin(5e-7));
  CHECK(lr_at_iteration(lr, kEpochs, 15, kIters - 1, kIters) == Approx(0.000389).margin(5e-7));
  CHECK(lr_at_iteration(lr, kEpochs, 15, kIters - 1, kIters) ==
        Approx(1.7 / 14 / 312).epsilon(1e-12));
  // The first iteration of the next epoch is not what was logged: the log is not lr(e+1).
  CHECK(lr_at_iteration(lr, kEpochs, 1, 0, kIters) == Approx(0.850085).margin(5e-7));
  CHECK(std::abs(lr_at_iteration(lr, kEpochs, 1, 0, kIters) - 0.847361) > 1e-3);
}

TEST_CASE("the triangular LR starts at start_factor * lr and peaks at peak_epoch", "[schedule]") {
  const LrConfig lr = rn50_lr();
  CHECK(lr_at_iteration(lr, kEpochs, 0, 0, kIters) == 1e-4 * 1.7);
  // Global iteration 624 is the first of epoch 2: exactly the peak.
  CHECK(lr_at_iteration(lr, kEpochs, 2, 0, kIters) == 1.7);
  CHECK(lr_at_epoch(lr, kEpochs, 2) == 1.7);
  CHECK(lr_at_epoch(lr, kEpochs, 16) == 0.0);
  CHECK(lr_at_epoch(lr, kEpochs, 20) == 0.0);
  CHECK(lr_at_epoch(lr, kEpochs, 9) == Approx(1.7 * 7 / 14));
  // The last iteration of the run is not 0.
  CHECK(lr_at_iteration(lr, kEpochs, 15, kIters - 1, kIters) > 0.0);
  // Half-way through epoch 0 (FFCV: np.interp over the epoch's iterations).
  CHECK(lr_at_iteration(lr, kEpochs, 0, 156, kIters) == Approx((1.7e-4 + 0.850085) / 2));
}

TEST_CASE("lr_at agrees with lr_at_iteration and is linear in t for an integer peak",
          "[schedule]") {
  const LrConfig lr = rn50_lr();
  for (std::uint64_t e = 0; e < kEpochs; ++e) {
    for (std::uint64_t ix = 0; ix < kIters; ix += 13) {
      const double t = static_cast<double>(e) + static_cast<double>(ix) / kIters;
      const double expected = t <= 2 ? 1.7e-4 + (1.7 - 1.7e-4) * t / 2 : 1.7 * (16 - t) / 14;
      CHECK(lr_at(lr, kEpochs, t) == Approx(lr_at_iteration(lr, kEpochs, e, ix, kIters)));
      CHECK(lr_at(lr, kEpochs, t) == Approx(expected).margin(1e-12));
    }
  }
}

TEST_CASE("a fractional peak epoch interpolates between epoch boundaries as FFCV does",
          "[schedule]") {
  LrConfig lr;
  lr.lr = 1.0;
  lr.peak_epoch = 1.5;
  lr.start_factor = 0.0;
  const int epochs = 4;
  const double at1 = 1.0 / 1.5;  // rising edge at epoch 1
  const double at2 = 2.0 / 2.5;  // falling edge at epoch 2
  CHECK(lr_at_epoch(lr, epochs, 1) == Approx(at1));
  CHECK(lr_at_epoch(lr, epochs, 2) == Approx(at2));
  // Mid-epoch 1 is the chord between the boundary values, not the peak at 1.5.
  CHECK(lr_at_iteration(lr, epochs, 1, 5, 10) == Approx((at1 + at2) / 2));
  CHECK(lr_at(lr, epochs, 1.5) == Approx((at1 + at2) / 2));
  double highest = 0;
  for (std::uint64_t e = 0; e < 4; ++e) {
    for (std::uint64_t ix = 0; ix < 10; ++ix) {
      highest = std::max(highest, lr_at_iteration(lr, epochs, e, ix, 10));
    }
  }
  CHECK(highest < 1.0);
  CHECK(highest == Approx(at2));
}

TEST_CASE("a peak at epoch 0 starts at the peak", "[schedule]") {
  LrConfig lr;
  lr.lr = 2.0;
  lr.peak_epoch = 0;
  CHECK(lr_at_epoch(lr, 10, 0) == 2.0);
  CHECK(lr_at_epoch(lr, 10, 5) == Approx(1.0));
}

TEST_CASE("the step schedule multiplies by step_ratio every step_length epochs", "[schedule]") {
  LrConfig lr;
  lr.schedule = "step";
  lr.lr = 0.5;
  lr.step_ratio = 0.1;
  lr.step_length = 30;
  const int epochs = 90;
  CHECK(lr_at_epoch(lr, epochs, 0) == 0.5);
  CHECK(lr_at_epoch(lr, epochs, 29) == 0.5);
  CHECK(lr_at_epoch(lr, epochs, 30) == Approx(0.05));
  CHECK(lr_at_epoch(lr, epochs, 59) == Approx(0.05));
  CHECK(lr_at_epoch(lr, epochs, 60) == Approx(0.005));
  CHECK(lr_at_epoch(lr, epochs, 89) == Approx(0.005));
  CHECK(lr_at_epoch(lr, epochs, 90) == 0.0);
  // Within an epoch the value is constant, except before a step (FFCV's per-iteration ramp)...
  CHECK(lr_at_iteration(lr, epochs, 10, 50, 100) == 0.5);
  CHECK(lr_at_iteration(lr, epochs, 29, 0, 100) == 0.5);
  CHECK(lr_at_iteration(lr, epochs, 29, 50, 100) == Approx(0.275));
  // ...and in the last epoch, which ramps to 0.
  CHECK(lr_at_iteration(lr, epochs, 89, 50, 100) == Approx(0.0025));
  CHECK(lr_at_iteration(lr, epochs, 89, 99, 100) == Approx(0.00005));
}

TEST_CASE("the ImageNet ramps switch to 192 px at the released configs' epochs", "[schedule]") {
  // docs/recipes.md, "The paper's ImageNet recipes" (its table): the first 192 px epoch for each
  // epoch count, as FFCV's released rn18/rn50 configs give it.
  const std::pair<int, int> table[] = {{16, 12}, {24, 19}, {32, 25}, {40, 32}, {56, 45}, {88, 71}};
  for (const auto& [epochs, first_192] : table) {
    INFO("epochs " << epochs);
    const ResolutionConfig res = imagenet_ramp(epochs);
    CHECK(first_epoch_at(res, epochs, 192) == first_192);
    for (int e = 0; e < epochs; ++e) {
      CHECK(resolution_at(res, static_cast<std::uint64_t>(e)) == (e < first_192 ? 160 : 192));
    }
  }
}

TEST_CASE("the ImageNet recipe files give the same switch epochs", "[schedule]") {
  const std::pair<int, int> table[] = {{16, 12}, {24, 19}, {32, 25}, {40, 32}, {56, 45}, {88, 71}};
  for (const auto& [epochs, first_192] : table) {
    for (const char* arch : {"rn18", "rn50"}) {
      const Recipe recipe = load_recipe(std::string(FFCV_SOURCE_DIR) + "/recipes/imagenet/" + arch +
                                        "_" + std::to_string(epochs) + "_epochs.toml");
      INFO(recipe.name);
      CHECK(first_epoch_at(recipe.resolution, recipe.training.epochs, 192) == first_192);
      CHECK(resolution_at(recipe.resolution, 0) == 160);
    }
  }
}

TEST_CASE("a ramp value of exactly 176 px rounds half to even, up to 192", "[schedule]") {
  // 16 epochs: epoch 12 is half-way between start_ramp 11 and end_ramp 13; 176/32 = 5.5 -> 6.
  CHECK(resolution_at(imagenet_ramp(16), 12) == 192);
  // 32 epochs: epoch 25 is half-way between 23 and 27.
  CHECK(resolution_at(imagenet_ramp(32), 25) == 192);
}

TEST_CASE("halves round to even, where std::round would round up", "[schedule]") {
  ResolutionConfig res;
  res.min_res = 128;
  res.max_res = 160;
  res.start_ramp = 0;
  res.end_ramp = 2;
  res.round_to = 32;
  // Epoch 1: 144 px = 4.5 steps of 32. Half to even gives 4 (128); std::round gives 5 (160).
  CHECK(std::round(144.0 / 32) == 5.0);
  CHECK(resolution_at(res, 1) == 128);
  // Same with a step of 8: 100 + 16/2 = 108 = 13.5 steps -> 14 (both agree: 14 is even).
  res.min_res = 100;
  res.max_res = 116;
  res.round_to = 8;
  CHECK(resolution_at(res, 1) == 112);
}

TEST_CASE("resolution holds min_res up to start_ramp and max_res from end_ramp", "[schedule]") {
  ResolutionConfig res;  // defaults: 160 throughout
  for (std::uint64_t e = 0; e < 40; ++e) CHECK(resolution_at(res, e) == 160);

  res.min_res = 100;
  res.max_res = 200;
  res.start_ramp = 2;
  res.end_ramp = 12;
  res.round_to = 1;
  CHECK(resolution_at(res, 0) == 100);
  CHECK(resolution_at(res, 2) == 100);
  CHECK(resolution_at(res, 3) == 110);
  CHECK(resolution_at(res, 7) == 150);
  CHECK(resolution_at(res, 11) == 190);
  CHECK(resolution_at(res, 12) == 200);
  CHECK(resolution_at(res, 1000) == 200);

  // A zero-length ramp jumps at start_ramp + 1.
  res.start_ramp = res.end_ramp = 5;
  CHECK(resolution_at(res, 5) == 100);
  CHECK(resolution_at(res, 6) == 200);
}

}  // namespace ffcv::train
