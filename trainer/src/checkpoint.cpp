#include "ffcv/train/checkpoint.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <sstream>

#include "ffcv/train/checkpoint_recipe.hpp"
#include "ffcv/train/loss_scaler.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::train {
namespace {

// Parameters and buffers by full name; shape checks happen against these before loading.
std::vector<std::pair<std::string, at::Tensor>> model_tensors(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& item : model.named_parameters()) tensors.emplace_back(item.key(), item.value());
  for (const auto& item : model.named_buffers()) tensors.emplace_back(item.key(), item.value());
  return tensors;
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const LossScaler& scaler,
                     const TrainPosition& position, const std::string& recipe_toml,
                     const RunTotals& totals) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive, optimizer_archive, scaler_archive;
  for (const auto& [name, tensor] : model_tensors(model)) {
    model_archive.write(name, tensor.detach().cpu().contiguous(), /*is_buffer=*/true);
  }
  optimizer.save(optimizer_archive);
  scaler.save(scaler_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("scaler", scaler_archive);
  archive.write("position",
                torch::tensor({static_cast<std::int64_t>(position.epoch),
                               static_cast<std::int64_t>(position.batches_done),
                               static_cast<std::int64_t>(position.steps)}),
                /*is_buffer=*/true);
  // Doubles: the counts stay exact up to 2^53.
  archive.write("totals",
                torch::tensor({totals.train_seconds, static_cast<double>(totals.train_images),
                               totals.last_epoch_loss, totals.stopped_epoch_loss_sum,
                               totals.stopped_epoch_correct,
                               static_cast<double>(totals.stopped_epoch_batches)},
                              torch::kFloat64),
                /*is_buffer=*/true);
  archive.write("cpu_rng", at::detail::getDefaultCPUGenerator().get_state(), /*is_buffer=*/true);
  const at::Tensor recipe =
      torch::from_blob(const_cast<char*>(recipe_toml.data()),
                       {static_cast<std::int64_t>(recipe_toml.size())}, torch::kUInt8)
          .clone();
  archive.write("recipe", recipe, /*is_buffer=*/true);
  // Serialized in memory, then written through write_file_atomically: LibTorch's file writer
  // throws from its destructor when a write fails (a full disk, the file-size limit), which
  // ends the process; ours reports one IoError, removes its temporary and leaves the previous
  // checkpoint in place.
  std::string bytes;
  archive.save_to([&bytes](const void* data, std::size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  write_file_atomically(path, bytes);
}

std::string read_checkpoint_recipe(const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw ConfigError("checkpoint " + path + " cannot be read: " + e.what_without_backtrace());
  }
  at::Tensor recipe;
  if (!archive.try_read("recipe", recipe, /*is_buffer=*/true)) return "";
  const at::Tensor bytes = recipe.to(torch::kUInt8).contiguous();
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr<std::uint8_t>()),
                     static_cast<std::size_t>(bytes.numel()));
}

TrainPosition load_checkpoint(const std::string& path, torch::nn::Module& model,
                              torch::optim::Optimizer& optimizer, LossScaler& scaler,
                              RunTotals* totals) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw ConfigError("checkpoint " + path + " cannot be read: " + e.what_without_backtrace());
  }
  torch::serialize::InputArchive model_archive, optimizer_archive, scaler_archive;
  at::Tensor position;
  try {
    archive.read("model", model_archive);
    archive.read("optimizer", optimizer_archive);
    archive.read("scaler", scaler_archive);
    archive.read("position", position, /*is_buffer=*/true);
  } catch (const c10::Error& e) {
    throw ConfigError("checkpoint " + path +
                      " is not a trainer checkpoint: " + e.what_without_backtrace());
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : model_tensors(model)) {
    at::Tensor stored;
    if (!model_archive.try_read(name, stored, /*is_buffer=*/true)) {
      throw ConfigError("checkpoint " + path + " has no '" + name +
                        "': it was saved from a different model");
    }
    if (stored.sizes() != tensor.sizes()) {
      std::ostringstream message;
      message << "checkpoint " << path << ": '" << name << "' has shape " << stored.sizes()
              << ", the model's is " << tensor.sizes();
      throw ConfigError(message.str());
    }
    tensor.copy_(stored);
  }
  optimizer.load(optimizer_archive);
  // The state comes back on the CPU; SGD's momentum must live where its parameter does.
  for (auto& group : optimizer.param_groups()) {
    for (auto& parameter : group.params()) {
      auto it = optimizer.state().find(parameter.unsafeGetTensorImpl());
      if (it == optimizer.state().end()) continue;
      if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
        if (sgd->momentum_buffer().defined()) {
          sgd->momentum_buffer(sgd->momentum_buffer().to(parameter.device()));
        }
      }
    }
  }
  scaler.load(scaler_archive);
  at::Tensor rng;
  if (archive.try_read("cpu_rng", rng, /*is_buffer=*/true)) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(rng);
  }
  at::Tensor stored_totals;
  if (totals != nullptr) {
    *totals = RunTotals{};
    if (archive.try_read("totals", stored_totals, /*is_buffer=*/true) &&
        stored_totals.numel() == 6) {
      const at::Tensor t = stored_totals.to(torch::kFloat64).contiguous();
      const double* v = t.data_ptr<double>();
      totals->train_seconds = v[0];
      totals->train_images = static_cast<std::uint64_t>(std::max(0.0, v[1]));
      totals->last_epoch_loss = v[2];
      totals->stopped_epoch_loss_sum = v[3];
      totals->stopped_epoch_correct = v[4];
      totals->stopped_epoch_batches = static_cast<std::uint64_t>(std::max(0.0, v[5]));
    }
  }
  TrainPosition result;
  result.epoch = static_cast<std::uint64_t>(position[0].item<std::int64_t>());
  result.batches_done = static_cast<std::uint64_t>(position[1].item<std::int64_t>());
  result.steps = static_cast<std::uint64_t>(position[2].item<std::int64_t>());
  return result;
}

}  // namespace ffcv::train
