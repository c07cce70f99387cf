// Evaluation: top-1 / top-5 accuracy and loss on the validation loader, with FFCV's test-time
// augmentation (the logits of the image and of its horizontal mirror, summed).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>

#include "ffcv/loader.hpp"
#include "ffcv/train/batch_input.hpp"

namespace ffcv::train {

class Communicator;

// Correct predictions among `logits` [N, C] for `labels` [N]: top-1 and top-k (k = min(5, C)).
struct TopKCounts {
  std::int64_t top1 = 0;
  std::int64_t top5 = 0;
};
TopKCounts count_correct(const at::Tensor& logits, const at::Tensor& labels);
// The same as an int64 tensor [top-1, top-5] on the logits' device (no host synchronisation).
at::Tensor correct_counts(const at::Tensor& logits, const at::Tensor& labels);

// forward(images) + forward(images mirrored along the width), or forward(images) alone.
at::Tensor tta_logits(const std::function<at::Tensor(const at::Tensor&)>& forward,
                      const at::Tensor& images, bool tta);

struct EvalResult {
  double top1 = 0, top5 = 0;  // fractions of `samples`
  double loss = 0;            // mean cross-entropy of the (averaged) logits, no smoothing
  std::uint64_t samples = 0;  // over all ranks
  double seconds = 0;
};

// Runs one pass over `val` (epoch `epoch` of its sequential order) and sums the counts over
// ranks. `forward` runs the model in eval mode under the caller's autocast settings.
EvalResult evaluate(const std::function<at::Tensor(const at::Tensor&)>& forward, Loader& val,
                    std::uint64_t epoch, const InputNormalizer& normalize, bool tta,
                    Communicator& communicator);

}  // namespace ffcv::train
