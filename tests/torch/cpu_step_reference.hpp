// The loader core's CPU steps run over a whole batch tensor, sample by sample: the reference
// that the device steps (ffcv/torch/device_op_registry.hpp) must match; and the inputs the
// device-step tests share.
#pragma once

#include <torch/torch.h>

#include <string>

#include "ffcv/steps/op_params.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/torch/batch_tensors.hpp"

namespace ffcv::test {

// normalize with ImageNet's mean and std on the 0-255 scale (add ",dtype=..." as needed).
inline const std::string kImageNetNormalize =
    "normalize:mean=[123.675,116.28,103.53],std=[58.395,57.12,57.375]";

// Uniform uint8 images [n, h, w, c] from torch's generator seeded with `seed`.
inline at::Tensor random_images(std::uint64_t seed, std::int64_t n, std::int64_t h, std::int64_t w,
                                std::int64_t c = 3) {
  torch::manual_seed(seed);
  return torch::randint(0, 256, {n, h, w, c}, torch::kUInt8);
}

// The CPU step `text` (NAME[:key=value,...]) applied to every sample of the contiguous CPU
// `batch` [N, ...].
inline at::Tensor run_cpu_step(const std::string& text, const at::Tensor& batch) {
  const OpSpec spec = parse_op_spec(text);
  const auto step = OpRegistry::global().make_operation(spec.name, spec.params);
  TensorState input{torch_adapter::numpy_dtype(batch.scalar_type()), {}, Device::kCpu};
  for (std::int64_t d = 1; d < batch.dim(); ++d) {
    input.shape.push_back(static_cast<std::uint64_t>(batch.size(d)));
  }
  const TensorState output = step->declare(input);
  std::vector<std::int64_t> sizes{batch.size(0)};
  for (const std::uint64_t d : output.shape) sizes.push_back(static_cast<std::int64_t>(d));
  at::Tensor out = torch::empty(sizes, torch::dtype(torch_adapter::scalar_type(output.dtype)));
  const at::Tensor in = batch.contiguous();
  const auto in_bytes = static_cast<std::int64_t>(input.byte_size());
  const auto out_bytes = static_cast<std::int64_t>(output.byte_size());
  std::vector<std::uint8_t> scratch(step->scratch_bytes());
  for (std::int64_t i = 0; i < batch.size(0); ++i) {
    SampleContext context;
    context.index = static_cast<std::uint64_t>(i);
    step->apply(static_cast<const std::uint8_t*>(in.data_ptr()) + i * in_bytes,
                static_cast<std::uint8_t*>(out.data_ptr()) + i * out_bytes, scratch, context);
  }
  return out;
}

}  // namespace ffcv::test
