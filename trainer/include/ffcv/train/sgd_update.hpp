// One SGD update of a torch::optim::SGD's parameters, skipped when the loss scaler found an
// overflow, without making the host wait for the device on CUDA.
//
// torch::optim::SGD launches a few kernels per parameter, and skipping it on overflow needs the
// overflow flag on the host: a wait for the backward pass every step. While the host waits and
// then launches the update the GPU runs dry, and anything else on the host's cores (the loader's
// workers) lengthens that gap. On CUDA the update is instead ATen's fused multi-tensor SGD, one
// launch per parameter group, which reads the flag on the device and leaves the parameters and
// momentum untouched when it is set. The momentum buffers stay in the optimizer's own state, so
// checkpoints are the same either way. On the CPU it is torch::optim::SGD::step(), skipped on
// overflow (reading the flag there costs nothing).
//
// Same update as torch::optim::SGD: d = grad + weight_decay * p; buf = grad on a parameter's
// first step, else momentum * buf + (1 - dampening) * d; p -= lr * (nesterov ? d + momentum *
// buf : buf).
#pragma once

#include <torch/optim/sgd.h>

namespace ffcv::train {

// `found_inf`: the loss scaler's float32 [1] flag (1 = overflow, skip), or undefined when no
// scaler is in use. Learning rates and the rest come from each parameter group's options.
void sgd_update(torch::optim::SGD& optimizer, const at::Tensor& found_inf);

}  // namespace ffcv::train
