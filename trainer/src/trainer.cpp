#include "ffcv/train/trainer.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <optional>

#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/train/dataset_check.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/model_run.hpp"
#include "ffcv/train/schedules.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/train/train_step.hpp"
#include "ffcv/train/train_together.hpp"
#include "ffcv/util/errors.hpp"
#ifdef FFCV_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace ffcv::train {

RunSummary run_training(const Recipe& recipe_in, const RunOptions& options) {
  Recipe recipe = recipe_in;
  const RankInfo info = rank_from_environment(recipe.dist);
  recipe.dist.world_size = info.world_size;
  const at::Device device = training_device(recipe.training.device, info.local_rank);
  const bool on_cuda = device.is_cuda();
#ifdef FFCV_WITH_CUDA
  // The rank's GPU becomes current before anything touches CUDA, so that pinned memory, events,
  // NCCL and kernels launched without an explicit device all land on it rather than on GPU 0.
  if (on_cuda) c10::cuda::set_device(device.index());
#endif
  const std::string backend = resolve_backend(recipe.dist.backend, on_cuda);
  if (backend == "nccl" && info.local_world_size > static_cast<int>(torch::cuda::device_count())) {
    throw ConfigError(
        "NCCL needs a GPU of its own per rank: " + std::to_string(info.local_world_size) +
        " ranks on this machine but " + std::to_string(torch::cuda::device_count()) +
        " CUDA device(s); start at most that many (--nproc), or set "
        "dist.backend = \"gloo\" to share a GPU");
  }
  Communicator comm(info, backend);

  // Threads: the recipe's, or this machine's cores shared among its ranks.
  const int per_rank = cores_per_share(info.local_world_size);
  torch::set_num_threads(recipe.training.threads > 0 ? recipe.training.threads : per_rank);
  recipe.data.num_workers = resolve_workers(recipe.data.num_workers, per_rank);
  apply_cudnn_settings(recipe.training);
  check_labels_fit_model(recipe);

  ModelRun run(recipe, options, device, comm);
  TrainData data(
      recipe, ShardSpec{info.rank, info.world_size},
      resolution_at(recipe.resolution, run.next_epoch()),
      on_cuda ? std::optional<BatchAllocator>(torch_adapter::pinned_allocator()) : std::nullopt);
  run.announce(data.train().reader().num_samples(), data.val().reader().num_samples(),
               recipe.data.num_workers);
  train_on_shared_batches(data, {&run}, device);
  return run.finish();
}

int cuda_device_count() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

}  // namespace ffcv::train
