// Data-parallel training over torch's c10d: one process per device, NCCL between GPUs, Gloo
// between CPU processes.
//
// Ranks meet through a TCPStore at MASTER_ADDR:MASTER_PORT, as torchrun's ranks do, so the same
// recipe runs on one machine (`ffcv run --nproc N` sets the variables) or across several (the
// user sets them). Gradients are averaged with bucketed all-reduces after backward, the model's
// parameters are broadcast from rank 0 at the start and its buffers (BatchNorm statistics)
// before every forward pass, matching DistributedDataParallel's defaults.
//
// With one process there is no process group at all and every collective returns at once.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ffcv/train/recipe.hpp"

namespace ffcv::train {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // index of the process on its machine: its GPU
  int local_world_size = 1;  // processes on this machine (they share its cores)
  std::string address = "localhost";
  int port = 12355;
};

// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (default: WORLD_SIZE), MASTER_ADDR and
// MASTER_PORT when WORLD_SIZE is set, else one process with the recipe's address and port.
// ConfigError on malformed or inconsistent values.
RankInfo rank_from_environment(const DistConfig& config);

// "nccl" or "gloo" for `backend` ("auto": NCCL on CUDA, Gloo on CPU). ConfigError when the build
// lacks it or it does not fit the device.
std::string resolve_backend(const std::string& backend, bool on_cuda);

class Communicator {
 public:
  Communicator(const RankInfo& info, const std::string& backend,
               std::chrono::milliseconds timeout = std::chrono::minutes(10));
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return info_.rank; }
  int world_size() const { return info_.world_size; }
  bool is_main() const { return info_.rank == 0; }
  const std::string& backend() const { return backend_; }

  // Copies rank `root`'s values of `tensors` into every rank's, in place, packed into one
  // collective per dtype (and per 25 MiB).
  void broadcast(const std::vector<at::Tensor>& tensors, int root = 0);
  // Replaces each parameter's gradient by its mean over ranks, in buckets of about
  // `bucket_bytes`. Missing gradients count as zeros so every rank runs the same collectives.
  void average_gradients(const std::vector<at::Tensor>& parameters,
                         std::size_t bucket_bytes = std::size_t{25} << 20);
  // In place, over ranks. Host tensors are fine with NCCL too: they are staged on the current
  // GPU (set it to the rank's first).
  void sum(const at::Tensor& tensor);
  void min(const at::Tensor& tensor);
  void barrier();

 private:
  struct Group;
  // Runs `collective` on `tensor`, or on a CUDA copy of it when the backend needs one.
  void run_on_group_device(const at::Tensor& tensor,
                           const std::function<void(at::Tensor&)>& collective);
  RankInfo info_;
  std::string backend_;
  std::unique_ptr<Group> group_;
};

}  // namespace ffcv::train
