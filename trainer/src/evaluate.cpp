#include "ffcv/train/evaluate.hpp"

#include <torch/torch.h>

#include "ffcv/torch/batch_feed.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/util/stopwatch.hpp"

namespace ffcv::train {

at::Tensor correct_counts(const at::Tensor& logits, const at::Tensor& labels) {
  const std::int64_t k = std::min<std::int64_t>(5, logits.size(1));
  const at::Tensor top = std::get<1>(logits.topk(k, /*dim=*/1));
  const at::Tensor hits = top.eq(labels.view({-1, 1}));
  return torch::stack({hits.narrow(1, 0, 1).sum(), hits.sum()});
}

TopKCounts count_correct(const at::Tensor& logits, const at::Tensor& labels) {
  const at::Tensor counts = correct_counts(logits, labels).cpu();
  return {counts[0].item<std::int64_t>(), counts[1].item<std::int64_t>()};
}

at::Tensor tta_logits(const std::function<at::Tensor(const at::Tensor&)>& forward,
                      const at::Tensor& images, bool tta) {
  at::Tensor logits = forward(images);
  if (tta) logits = logits + forward(images.flip({3}));
  return logits;
}

EvalResult evaluate(const std::function<at::Tensor(const at::Tensor&)>& forward, Loader& val,
                    std::uint64_t epoch, const InputNormalizer& normalize, bool tta,
                    Communicator& communicator) {
  const Stopwatch start;
  torch::NoGradGuard no_grad;
  // top-1, top-5 and summed loss accumulated where the model runs (no host sync per batch); the
  // sample count is known on the host. All four are reduced over ranks in one collective.
  at::Tensor sums;
  double samples = 0;
  torch_adapter::BatchFeed feed(val.epoch(epoch), normalize.device(), normalize.stages(val));
  while (auto tensors = feed.next()) {
    const ModelInput input = normalize((*tensors)[0], (*tensors)[1]);
    at::Tensor logits = tta_logits(forward, input.images, tta).to(torch::kFloat32);
    if (tta) logits = logits * 0.5;
    const at::Tensor loss = torch::nn::functional::cross_entropy(
        logits, input.labels,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    const at::Tensor batch_sums =
        torch::cat({correct_counts(logits, input.labels).to(torch::kFloat64),
                    loss.to(torch::kFloat64).view({1})});
    sums = sums.defined() ? sums + batch_sums : batch_sums;
    samples += static_cast<double>(input.labels.size(0));
  }
  at::Tensor totals = torch::cat({sums.defined() ? sums.cpu() : torch::zeros({3}, torch::kFloat64),
                                  torch::tensor({samples}, torch::kFloat64)});
  communicator.sum(totals);
  EvalResult result;
  const double n = totals[3].item<double>();
  result.samples = static_cast<std::uint64_t>(n);
  if (n > 0) {
    result.top1 = totals[0].item<double>() / n;
    result.top5 = totals[1].item<double>() / n;
    result.loss = totals[2].item<double>() / n;
  }
  result.seconds = start.seconds();
  return result;
}

}  // namespace ffcv::train
