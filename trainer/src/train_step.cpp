#include "ffcv/train/train_step.hpp"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "ffcv/train/distributed.hpp"
#include "ffcv/train/param_groups.hpp"
#include "ffcv/train/sgd_update.hpp"

namespace ffcv::train {
namespace {

// Autocast for the enclosed forward pass (the C++ counterpart of torch.autocast).
class AutocastScope {
 public:
  AutocastScope(at::DeviceType device, at::ScalarType dtype, bool enabled)
      : device_(device), enabled_(enabled) {
    if (!enabled_) return;
    previous_enabled_ = at::autocast::is_autocast_enabled(device_);
    previous_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, previous_enabled_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  at::DeviceType device_;
  bool enabled_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

void to_channels_last(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (auto& b : model.buffers()) {
    if (b.dim() == 4) b.set_data(b.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

LossScalerOptions scaler_options(const Recipe& recipe) {
  LossScalerOptions options;
  options.enabled = recipe.training.precision == "fp16";
  return options;
}

}  // namespace

std::mutex& global_generator_lock() {
  static std::mutex lock;
  return lock;
}

void apply_cudnn_settings(const TrainingConfig& training) {
  at::globalContext().setDeterministicCuDNN(training.deterministic);
  at::globalContext().setBenchmarkCuDNN(training.cudnn_benchmark && !training.deterministic);
}

TrainStep::TrainStep(const Recipe& recipe, at::Device device, Communicator& communicator)
    : recipe_(recipe),
      device_(device),
      communicator_(communicator),
      scaler_(scaler_options(recipe), device),
      autocast_(recipe.training.precision != "fp32"),
      compute_dtype_(recipe.training.precision == "fp16"   ? at::kHalf
                     : recipe.training.precision == "bf16" ? at::kBFloat16
                                                           : at::kFloat) {
  {
    // The initial weights come from torch's global generator, seeded here: runs built on
    // several threads at once (train_together.hpp) take turns.
    const std::lock_guard<std::mutex> hold(global_generator_lock());
    torch::manual_seed(recipe.data.seed);
    model_ = ResNet(ResNetOptions{recipe.model.arch, recipe.model.width, recipe.model.stem,
                                  recipe.model.num_classes});
    if (recipe.model.blurpool) blurred_ = apply_blurpool(*model_);
  }
  if (recipe.training.channels_last) to_channels_last(*model_);
  model_->to(device);
  parameters_ = model_->parameters();
  buffers_ = model_->buffers();
  broadcast_state();

  torch::optim::SGDOptions sgd(1.0);
  sgd.momentum(recipe.training.momentum);
  WeightDecayGroups groups =
      weight_decay_groups(*model_, sgd, recipe.training.weight_decay, recipe.training.wd_exclude);
  optimizer_ = std::make_unique<torch::optim::SGD>(groups.groups, sgd);
}

TrainStep::~TrainStep() = default;

at::ScalarType TrainStep::input_dtype() const {
  return device_.is_cuda() ? compute_dtype_ : at::kFloat;
}

void TrainStep::broadcast_buffers() {
  if (communicator_.world_size() > 1) communicator_.broadcast(buffers_);
}

void TrainStep::broadcast_state() {
  communicator_.broadcast(parameters_);
  broadcast_buffers();
}

StepResult TrainStep::operator()(const ModelInput& input, double learning_rate) {
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(learning_rate);
  }
  broadcast_buffers();
  optimizer_->zero_grad(/*set_to_none=*/true);
  at::Tensor logits, loss;
  {
    std::unique_lock<std::mutex> hold;
    if (forward_lock_ != nullptr) hold = std::unique_lock<std::mutex>(*forward_lock_);
    AutocastScope scope(device_.type(), compute_dtype_, autocast_);
    logits = model_->forward(input.images);
    namespace F = torch::nn::functional;
    const double smoothing = recipe_.training.label_smoothing;
    if (input.mix_weights.defined()) {
      // Mixup: w * CE(label) + (1 - w) * CE(partner's label), per sample, then the mean.
      const auto per_sample =
          F::CrossEntropyFuncOptions().label_smoothing(smoothing).reduction(torch::kNone);
      const at::Tensor own = F::cross_entropy(logits, input.labels, per_sample);
      const at::Tensor partner = F::cross_entropy(logits, input.partner_labels, per_sample);
      loss = (input.mix_weights * own + (1 - input.mix_weights) * partner).mean();
    } else {
      loss = F::cross_entropy(logits, input.labels,
                              F::CrossEntropyFuncOptions().label_smoothing(smoothing));
    }
  }
  scaler_.scale(loss).backward();
  communicator_.average_gradients(parameters_);
  sgd_update(*optimizer_, scaler_.unscale(parameters_));
  scaler_.update();
  torch::NoGradGuard no_grad;
  return {loss.detach(), logits.argmax(1).eq(input.labels).sum()};
}

at::Tensor TrainStep::forward_eval(const at::Tensor& images) {
  std::unique_lock<std::mutex> hold;
  if (forward_lock_ != nullptr) hold = std::unique_lock<std::mutex>(*forward_lock_);
  AutocastScope scope(device_.type(), compute_dtype_, autocast_);
  return model_->forward(images).to(torch::kFloat32);
}

}  // namespace ffcv::train
