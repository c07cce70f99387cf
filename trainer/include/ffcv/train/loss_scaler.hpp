// LossScaler: dynamic loss scaling for fp16 training, the C++ counterpart of torch.amp's
// GradScaler (LibTorch has none).
//
// The loss is multiplied by `scale` before backward so small fp16 gradients do not flush to
// zero. Before the optimizer step the gradients are divided by the scale and checked: if any is
// inf or NaN the step is skipped and the scale halves; after `growth_interval` clean steps in a
// row it doubles. Defaults are GradScaler's (2^16, x2 per 2000 clean steps, x0.5 on overflow).
// A skipped step still consumes its learning-rate slot, as in the reference recipe.
// Disabled (fp32, bf16), every call is a pass-through.
#pragma once

#include <torch/types.h>

#include <vector>

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace ffcv::train {

struct LossScalerOptions {
  bool enabled = false;
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
};

class LossScaler {
 public:
  LossScaler(LossScalerOptions options, at::Device device);

  at::Tensor scale(const at::Tensor& loss) const;
  // Unscales the gradients of `parameters` in place and returns the overflow flag on the device
  // (float32 [1]: 1 when any gradient is inf or NaN, the step to skip), without waiting for it;
  // sgd_update() consumes it there. Returns an undefined tensor when disabled.
  at::Tensor unscale(const std::vector<at::Tensor>& parameters);
  // unscale(), then waits for the flag: true when every gradient is finite (or disabled).
  bool unscale_and_check(const std::vector<at::Tensor>& parameters);
  // Adjusts the scale after a step given the last unscale() result.
  void update();

  bool enabled() const { return options_.enabled; }
  double current_scale() const;        // waits for the device
  std::int64_t skipped_steps() const;  // waits for the device

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  LossScalerOptions options_;
  at::Tensor scale_;           // float32 [1] on the device
  at::Tensor growth_tracker_;  // int32 [1]: clean steps in a row
  at::Tensor found_inf_;       // float32 [1]: 1 when the last check saw inf/NaN
  at::Tensor skipped_;         // int64 [1]: steps skipped so far, counted on the device
};

}  // namespace ffcv::train
