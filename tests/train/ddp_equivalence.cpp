// Data parallelism against one process: N ranks over Gloo, each on its share of a fixed global
// batch, must end with identical parameters, equal (to float rounding) to one process trained on
// the whole batch. The model has no BatchNorm, whose per-rank batch statistics would make the
// two runs legitimately differ.
//
//   ffcv_ddp_equivalence            runs the check: 1 rank, then 2 and 3 ranks, compares
//   (with RANK/WORLD_SIZE set)      one rank's training; writes its parameters to $OUT_DIR
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/rank_launcher.hpp"
#include "ffcv/train/distributed.hpp"

using namespace ffcv::train;

namespace {

constexpr int kGlobalBatch = 12;
constexpr int kSteps = 6;

torch::nn::Sequential make_model() {
  torch::manual_seed(7);
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).padding(1)),
                               torch::nn::ReLU(), torch::nn::AdaptiveAvgPool2d(1),
                               torch::nn::Flatten(), torch::nn::Linear(4, 3));
}

std::string parameters_path(const std::string& dir, int world, int rank) {
  return dir + "/world" + std::to_string(world) + "-rank" + std::to_string(rank) + ".pt";
}

int train_rank(const std::string& out_dir) {
  DistConfig config;
  const RankInfo info = rank_from_environment(config);
  Communicator comm(info, resolve_backend("gloo", false));
  torch::nn::Sequential model = make_model();
  comm.broadcast(model->parameters());
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(0.5).momentum(0.9).weight_decay(1e-3));
  const int share = kGlobalBatch / info.world_size;
  for (int step = 0; step < kSteps; ++step) {
    torch::manual_seed(100 + step);  // the same global batch on every rank
    const at::Tensor images = torch::randn({kGlobalBatch, 3, 8, 8});
    const at::Tensor labels = torch::randint(0, 3, {kGlobalBatch});
    const at::Tensor mine = images.narrow(0, info.rank * share, share);
    const at::Tensor my_labels = labels.narrow(0, info.rank * share, share);
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(mine), my_labels).backward();
    comm.average_gradients(model->parameters(), /*bucket_bytes=*/256);  // several buckets
    optimizer.step();
  }
  std::vector<at::Tensor> parameters;
  for (const auto& p : model->parameters()) parameters.push_back(p.detach().clone());
  torch::save(parameters, parameters_path(out_dir, info.world_size, info.rank));
  return 0;
}

std::vector<at::Tensor> load(const std::string& path) {
  std::vector<at::Tensor> tensors;
  torch::load(tensors, path);
  return tensors;
}

}  // namespace

int main() {
  if (std::getenv("WORLD_SIZE") != nullptr) return train_rank(std::getenv("OUT_DIR"));
  char pattern[] = "/tmp/ffcv-ddp-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  ::setenv("OUT_DIR", dir.c_str(), 1);
  const std::string self = ffcv::tools::this_program();
  int failures = 0;
  for (int world : {1, 2, 3}) {
    if (ffcv::tools::launch_ranks(self, {}, world) != 0) {
      std::fprintf(stderr, "FAIL: the %d-rank run failed\n", world);
      return 1;
    }
  }
  const std::vector<at::Tensor> reference = load(parameters_path(dir, 1, 0));
  for (int world : {2, 3}) {
    const std::vector<at::Tensor> rank0 = load(parameters_path(dir, world, 0));
    for (int rank = 0; rank < world; ++rank) {
      const std::vector<at::Tensor> mine = load(parameters_path(dir, world, rank));
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (!torch::equal(mine[i], rank0[i])) {
          std::fprintf(stderr, "FAIL: world %d rank %d parameter %zu differs from rank 0\n", world,
                       rank, i);
          ++failures;
        }
        const double gap = (mine[i] - reference[i]).abs().max().item<double>();
        if (!torch::allclose(mine[i], reference[i], 1e-5, 1e-6)) {
          std::fprintf(stderr, "FAIL: world %d parameter %zu differs from one process by %g\n",
                       world, i, gap);
          ++failures;
        }
      }
    }
    std::printf("world %d: ranks identical, equal to one process on the global batch\n", world);
  }
  for (int world : {1, 2, 3}) {
    for (int rank = 0; rank < world; ++rank) std::remove(parameters_path(dir, world, rank).c_str());
  }
  ::rmdir(dir.c_str());
  return failures == 0 ? 0 : 1;
}
