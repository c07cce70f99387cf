#include "ffcv/train/loss_scaler.hpp"

#include <torch/torch.h>

namespace ffcv::train {

LossScaler::LossScaler(LossScalerOptions options, at::Device device) : options_(options) {
  const auto on_device = torch::TensorOptions().device(device);
  scale_ = torch::full({1}, options_.init_scale, on_device.dtype(torch::kFloat32));
  growth_tracker_ = torch::zeros({1}, on_device.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, on_device.dtype(torch::kFloat32));
  skipped_ = torch::zeros({1}, on_device.dtype(torch::kInt64));
}

at::Tensor LossScaler::scale(const at::Tensor& loss) const {
  if (!options_.enabled) return loss;
  return loss * scale_.to(loss.scalar_type());
}

at::Tensor LossScaler::unscale(const std::vector<at::Tensor>& parameters) {
  if (!options_.enabled) return {};
  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  found_inf_.zero_();
  const at::Tensor inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  skipped_ += found_inf_.to(torch::kInt64);
  return found_inf_;
}

bool LossScaler::unscale_and_check(const std::vector<at::Tensor>& parameters) {
  const at::Tensor found_inf = unscale(parameters);
  return !found_inf.defined() || found_inf.item<float>() == 0.0f;
}

std::int64_t LossScaler::skipped_steps() const { return skipped_.item<std::int64_t>(); }

void LossScaler::update() {
  if (!options_.enabled) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
}

double LossScaler::current_scale() const { return options_.enabled ? scale_.item<double>() : 1.0; }

void LossScaler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("scale", scale_.cpu(), /*is_buffer=*/true);
  archive.write("growth_tracker", growth_tracker_.cpu(), /*is_buffer=*/true);
  archive.write("skipped", skipped_.cpu(), /*is_buffer=*/true);
}

void LossScaler::load(torch::serialize::InputArchive& archive) {
  at::Tensor scale, tracker, skipped;
  archive.read("scale", scale, /*is_buffer=*/true);
  archive.read("growth_tracker", tracker, /*is_buffer=*/true);
  archive.read("skipped", skipped, /*is_buffer=*/true);
  scale_.copy_(scale);
  growth_tracker_.copy_(tracker);
  skipped_.copy_(skipped.reshape({1}));
}

}  // namespace ffcv::train
