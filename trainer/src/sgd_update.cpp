#include "ffcv/train/sgd_update.hpp"

#include <torch/torch.h>

namespace ffcv::train {
namespace {

bool on_cuda(const torch::optim::SGD& optimizer) {
  for (const auto& group : optimizer.param_groups()) {
    for (const at::Tensor& p : group.params()) return p.is_cuda();
  }
  return false;
}

// The parameters of one group that have gradients, split by whether their momentum buffer
// exists yet (the fused kernel's is_first_step applies to a whole call).
struct FusedLists {
  std::vector<at::Tensor> params, grads, buffers;
};

void fused_update(torch::optim::SGD& optimizer, const at::Tensor& found_inf) {
  const std::optional<at::Tensor> flag =
      found_inf.defined() ? std::optional<at::Tensor>(found_inf) : std::nullopt;
  auto& state = optimizer.state();
  for (auto& group : optimizer.param_groups()) {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    const bool momentum = options.momentum() != 0;
    FusedLists first, later;
    for (const at::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      FusedLists* lists = &later;
      if (momentum) {
        auto found = state.find(p.unsafeGetTensorImpl());
        if (found == state.end()) {
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(torch::zeros_like(p));
          found = state.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
          lists = &first;
        }
        auto& sgd_state = static_cast<torch::optim::SGDParamState&>(*found->second);
        if (sgd_state.momentum_buffer().strides() != p.strides()) {
          // The kernel needs the parameter's layout (a buffer restored from a checkpoint may
          // have lost channels_last).
          sgd_state.momentum_buffer(torch::empty_like(p).copy_(sgd_state.momentum_buffer()));
        }
        lists->buffers.push_back(sgd_state.momentum_buffer());
      }
      lists->params.push_back(p);
      lists->grads.push_back(p.grad());
    }
    for (FusedLists* lists : {&first, &later}) {
      if (lists->params.empty()) continue;
      at::_fused_sgd_(lists->params, lists->grads, lists->buffers, options.weight_decay(),
                      options.momentum(), options.lr(), options.dampening(), options.nesterov(),
                      /*maximize=*/false, /*is_first_step=*/lists == &first,
                      /*grad_scale=*/std::nullopt, flag);
    }
  }
}

}  // namespace

void sgd_update(torch::optim::SGD& optimizer, const at::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  if (on_cuda(optimizer)) {
    fused_update(optimizer, found_inf);
    return;
  }
  if (found_inf.defined() && found_inf.item<float>() != 0.0f) return;
  optimizer.step();
}

}  // namespace ffcv::train
