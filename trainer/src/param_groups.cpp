#include "ffcv/train/param_groups.hpp"

#include <torch/torch.h>

#include <memory>

namespace ffcv::train {

WeightDecayGroups weight_decay_groups(const torch::nn::Module& model,
                                      const torch::optim::SGDOptions& base, double weight_decay,
                                      const std::string& exclude_substring) {
  WeightDecayGroups result;
  std::vector<torch::Tensor> decayed;
  std::vector<torch::Tensor> excluded;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const bool exclude =
        !exclude_substring.empty() && item.key().find(exclude_substring) != std::string::npos;
    (exclude ? excluded : decayed).push_back(item.value());
    (exclude ? result.excluded_names : result.decayed_names).push_back(item.key());
  }
  auto options_with = [&](double group_weight_decay) {
    auto options = std::make_unique<torch::optim::SGDOptions>(base);
    options->weight_decay(group_weight_decay);
    return options;
  };
  result.groups.emplace_back(std::move(decayed), options_with(weight_decay));
  result.groups.emplace_back(std::move(excluded), options_with(0.0));
  return result;
}

}  // namespace ffcv::train
