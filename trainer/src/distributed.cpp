#include "ffcv/train/distributed.hpp"

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <functional>

#include "ffcv/util/errors.hpp"

// Gloo's headers are not in the torch wheel; Debian's libgloo-dev provides them (the process
// group only holds gloo objects by pointer, so the header version does not matter).
#if __has_include(<gloo/context.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define FFCV_HAVE_GLOO 1
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace ffcv::train {
namespace {

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < lo || value > hi) {
    throw ConfigError(std::string("environment variable ") + name + "=" + text +
                      " is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<int>(value);
}

}  // namespace

RankInfo rank_from_environment(const DistConfig& config) {
  RankInfo info;
  info.address = config.address;
  info.port = config.port;
  if (std::getenv("WORLD_SIZE") == nullptr) return info;
  info.world_size = env_int("WORLD_SIZE", 1, 1, 1 << 20);
  info.rank = env_int("RANK", -1, 0, info.world_size - 1);
  if (info.rank < 0) throw ConfigError("WORLD_SIZE is set but RANK is not");
  info.local_rank = env_int("LOCAL_RANK", info.rank, 0, info.world_size - 1);
  info.local_world_size = env_int("LOCAL_WORLD_SIZE", info.world_size, 1, info.world_size);
  if (const char* address = std::getenv("MASTER_ADDR"); address != nullptr && *address) {
    info.address = address;
  }
  info.port = env_int("MASTER_PORT", info.port, 1, 65535);
  return info;
}

std::string resolve_backend(const std::string& backend, bool on_cuda) {
  const std::string chosen = backend == "auto" ? (on_cuda ? "nccl" : "gloo") : backend;
  if (chosen == "nccl") {
    if (!on_cuda) throw ConfigError("dist.backend = \"nccl\" needs CUDA devices; use \"gloo\"");
#ifndef USE_C10D_NCCL
    throw ConfigError("this build has no NCCL process group (LibTorch without CUDA)");
#endif
  } else if (chosen == "gloo") {
#ifndef FFCV_HAVE_GLOO
    throw ConfigError("this build has no Gloo process group (install libgloo-dev and rebuild)");
#endif
  } else {
    throw ConfigError("dist.backend must be auto, nccl or gloo, got '" + backend + "'");
  }
  return chosen;
}

struct Communicator::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
};

Communicator::Communicator(const RankInfo& info, const std::string& backend,
                           std::chrono::milliseconds timeout)
    : info_(info), backend_(backend) {
  if (info_.world_size == 1) return;
  group_ = std::make_unique<Group>();
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(info_.port);
  store_options.isServer = info_.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(info_.world_size);
  store_options.timeout = timeout;
  group_->store = c10::make_intrusive<c10d::TCPStore>(info_.address, store_options);
  if (backend_ == "gloo") {
#ifdef FFCV_HAVE_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    group_->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, info_.rank,
                                                                  info_.world_size, options);
#endif
  } else if (backend_ == "nccl") {
#ifdef USE_C10D_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    group_->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_->store, info_.rank,
                                                                  info_.world_size, options);
#endif
  }
  if (!group_->backend) throw ConfigError("no process group for backend '" + backend_ + "'");
}

Communicator::~Communicator() {
  if (!group_) return;
  try {
    group_->backend->shutdown();  // NCCL: release its communicators before the process exits
  } catch (const std::exception&) {
    // Nothing to do at teardown.
  }
}

namespace {

// Runs `collective` on `tensors` packed into flat buckets: consecutive tensors of one dtype, up to
// `bucket_bytes` each (at least one tensor), then copies the results back into the tensors. One
// collective per bucket instead of one per tensor.
void over_buckets(const std::vector<at::Tensor>& tensors, std::size_t bucket_bytes,
                  const std::function<void(at::Tensor&)>& collective) {
  std::size_t begin = 0;
  while (begin < tensors.size()) {
    std::size_t end = begin;
    std::size_t bytes = 0;
    while (end < tensors.size() && tensors[end].scalar_type() == tensors[begin].scalar_type() &&
           (end == begin || bytes + tensors[end].nbytes() <= bucket_bytes)) {
      bytes += tensors[end].nbytes();
      ++end;
    }
    std::vector<at::Tensor> flat_parts;
    for (std::size_t i = begin; i < end; ++i) flat_parts.push_back(tensors[i].reshape({-1}));
    at::Tensor bucket = torch::cat(flat_parts);
    collective(bucket);
    std::int64_t offset = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::int64_t n = tensors[i].numel();
      tensors[i].copy_(bucket.narrow(0, offset, n).view_as(tensors[i]));
      offset += n;
    }
    begin = end;
  }
}

}  // namespace

void Communicator::run_on_group_device(const at::Tensor& tensor,
                                       const std::function<void(at::Tensor&)>& collective) {
  if (backend_ == "nccl" && !tensor.is_cuda()) {
    // NCCL takes CUDA tensors only: stage host values (counters, flags) on the current GPU.
    at::Tensor staged = tensor.to(at::kCUDA);
    collective(staged);
    tensor.copy_(staged);
    return;
  }
  at::Tensor same = tensor;
  collective(same);
}

void Communicator::broadcast(const std::vector<at::Tensor>& tensors, int root) {
  if (!group_) return;
  torch::NoGradGuard no_grad;
  c10d::BroadcastOptions options;
  options.rootRank = root;
  over_buckets(tensors, std::size_t{25} << 20, [&](at::Tensor& bucket) {
    run_on_group_device(bucket, [&](at::Tensor& t) {
      std::vector<at::Tensor> one{t};
      group_->backend->broadcast(one, options)->wait();
    });
  });
}

void Communicator::average_gradients(const std::vector<at::Tensor>& parameters,
                                     std::size_t bucket_bytes) {
  if (!group_) return;
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  for (const at::Tensor& p : parameters) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  const double inv_world = 1.0 / info_.world_size;
  over_buckets(grads, bucket_bytes, [&](at::Tensor& bucket) {
    std::vector<at::Tensor> one{bucket};
    group_->backend->allreduce(one)->wait();
    bucket.mul_(inv_world);
  });
}

void Communicator::sum(const at::Tensor& tensor) {
  if (!group_) return;
  run_on_group_device(tensor, [&](at::Tensor& t) {
    std::vector<at::Tensor> one{t};
    group_->backend->allreduce(one)->wait();
  });
}

void Communicator::min(const at::Tensor& tensor) {
  if (!group_) return;
  run_on_group_device(tensor, [&](at::Tensor& t) {
    std::vector<at::Tensor> one{t};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MIN;
    group_->backend->allreduce(one, options)->wait();
  });
}

void Communicator::barrier() {
  if (!group_) return;
  group_->backend->barrier()->wait();
}

}  // namespace ffcv::train
