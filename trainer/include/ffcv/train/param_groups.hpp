// SGD parameter groups with FFCV's "no weight decay on BatchNorm" rule.
//
// FFCV's ImageNet recipe splits the parameters by a substring of their name: any parameter whose
// full name contains "bn" gets weight decay 0, every other one the configured weight decay.
// With torchvision's names this exempts the stem bn1 and every block's bn1/bn2/bn3 but NOT the
// downsample BatchNorms (`layerX.0.downsample.1.*`), and fc.bias is decayed too. A faithful port
// copies this name rule rather than "all BatchNorm parameters".
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include <string>
#include <vector>

namespace ffcv::train {

struct WeightDecayGroups {
  // Always two groups, in this order (FFCV lists them the other way round; only the order
  // differs):
  //   groups[0]: parameters whose name does not contain the substring, with the given weight
  //              decay;
  //   groups[1]: those whose name contains it, with weight decay 0.
  // With an empty substring every parameter is in groups[0] and groups[1] is empty, so that the
  // group indices stay fixed for the code that sets learning rates and logs.
  std::vector<torch::optim::OptimizerParamGroup> groups;
  // The full parameter names of each group, in the order of their tensors.
  std::vector<std::string> decayed_names;
  std::vector<std::string> excluded_names;
};

// Splits the parameters of `model` (all of them, in named_parameters() order) into the two
// groups above. Each group carries a copy of `base` (learning rate, momentum, dampening,
// nesterov as the caller sets them; FFCV: momentum 0.9, dampening 0, no Nesterov) with its own
// weight_decay. Pass `groups` to torch::optim::SGD.
WeightDecayGroups weight_decay_groups(const torch::nn::Module& model,
                                      const torch::optim::SGDOptions& base, double weight_decay,
                                      const std::string& exclude_substring);

}  // namespace ffcv::train
