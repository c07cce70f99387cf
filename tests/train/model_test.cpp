// The trainer's models: torchvision-compatible ResNets, BlurPool, and the weight-decay groups.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ffcv/train/blurpool.hpp"
#include "ffcv/train/param_groups.hpp"
#include "ffcv/train/resnet.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv::train;

namespace {

using Layout = std::map<std::string, std::vector<std::int64_t>>;

ResNet make_resnet(const std::string& arch, const std::string& stem = "imagenet",
                   double width = 1.0, int num_classes = 1000) {
  ResNetOptions options;
  options.arch = arch;
  options.stem = stem;
  options.width = width;
  options.num_classes = num_classes;
  return ResNet(options);
}

std::set<std::string> blurred_modules(const torch::nn::Module& model) {
  std::set<std::string> names;
  for (const auto& item : model.named_modules()) {
    if (std::dynamic_pointer_cast<BlurPoolConv2dImpl>(item.value())) names.insert(item.key());
  }
  return names;
}

Layout layout_of(const torch::nn::Module& model) {
  Layout layout;
  for (const auto& item : model.named_parameters()) {
    layout[item.key()] = item.value().sizes().vec();
  }
  for (const auto& item : model.named_buffers()) {
    layout[item.key()] = item.value().sizes().vec();
  }
  return layout;
}

// Parses the flat {"name": [int, ...], ...} object the layout script prints.
Layout parse_layout(const std::string& text) {
  Layout layout;
  std::size_t pos = 0;
  auto skip_space = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  auto expect = [&](char c) {
    skip_space();
    if (pos >= text.size() || text[pos] != c) {
      throw std::runtime_error(std::string("layout JSON: expected '") + c + "' at " +
                               std::to_string(pos));
    }
    ++pos;
  };
  expect('{');
  skip_space();
  if (pos < text.size() && text[pos] == '}') return layout;
  while (true) {
    expect('"');
    const std::size_t end = text.find('"', pos);
    if (end == std::string::npos) throw std::runtime_error("layout JSON: unterminated key");
    const std::string key = text.substr(pos, end - pos);
    pos = end + 1;
    expect(':');
    expect('[');
    std::vector<std::int64_t> shape;
    skip_space();
    if (text[pos] == ']') {
      ++pos;
    } else {
      while (true) {
        skip_space();
        std::size_t used = 0;
        shape.push_back(std::stoll(text.substr(pos, 24), &used));
        pos += used;
        skip_space();
        if (text[pos] == ']') {
          ++pos;
          break;
        }
        expect(',');
      }
    }
    layout[key] = shape;
    skip_space();
    if (text[pos] == '}') break;
    expect(',');
  }
  return layout;
}

// Runs the torchvision layout script; returns false (the test not run) when no Python is
// configured.
bool torchvision_layout(const std::string& arch, Layout& layout) {
  const std::string python = FFCV_PYTHON;
  if (python.empty() || !std::filesystem::exists(python)) {
    ffcv::test::skip_test("no Python at '" + python + "' (configure with -DFFCV_PYTHON=...)");
    return false;
  }
  const std::string script =
      std::string(FFCV_SOURCE_DIR) + "/tests/train/torchvision_resnet_layout.py";
  const std::string command = "'" + python + "' '" + script + "' " + arch;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  const int status = pclose(pipe);
  INFO("command: " << command);
  REQUIRE(status == 0);
  layout = parse_layout(output);
  return true;
}

// The blur kernel written out from its formula, [1,2,1]^T [1,2,1] / 16, one per channel.
torch::Tensor reference_blur(std::int64_t channels) {
  const float k[3][3] = {{1, 2, 1}, {2, 4, 2}, {1, 2, 1}};
  auto filter = torch::empty({channels, 1, 3, 3});
  for (std::int64_t c = 0; c < channels; ++c) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) filter[c][0][i][j] = k[i][j] / 16.0f;
    }
  }
  return filter;
}

}  // namespace

TEST_CASE("ResNet parameter counts equal torchvision's and BlurPool adds none", "[model]") {
  auto resnet18 = make_resnet("resnet18");
  auto resnet50 = make_resnet("resnet50");
  CHECK(parameter_count(*resnet18) == 11689512);
  CHECK(parameter_count(*resnet50) == 25557032);
  CHECK(apply_blurpool(*resnet18) == 6);
  CHECK(apply_blurpool(*resnet50) == 6);
  CHECK(parameter_count(*resnet18) == 11689512);
  CHECK(parameter_count(*resnet50) == 25557032);
}

TEST_CASE("apply_blurpool wraps the strided convs with at least 16 inputs", "[model]") {
  SECTION("resnet18: the first block's conv1 and downsample of layer2-4") {
    auto model = make_resnet("resnet18");
    REQUIRE(apply_blurpool(*model) == 6);
    CHECK(blurred_modules(*model) ==
          std::set<std::string>{"layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1",
                                "layer2.0.downsample.0", "layer3.0.downsample.0",
                                "layer4.0.downsample.0"});
    const auto buffers = model->named_buffers();
    CHECK(buffers["layer2.0.conv1.blur_filter"].sizes() == at::IntArrayRef({64, 1, 3, 3}));
    CHECK(buffers["layer3.0.downsample.0.blur_filter"].sizes() == at::IntArrayRef({128, 1, 3, 3}));
    CHECK(buffers["layer4.0.conv1.blur_filter"].sizes() == at::IntArrayRef({256, 1, 3, 3}));
    const auto parameters = model->named_parameters();
    CHECK(parameters.contains("layer2.0.conv1.conv.weight"));
    CHECK_FALSE(parameters.contains("layer2.0.conv1.weight"));
    CHECK_FALSE(parameters.contains("layer2.0.conv1.blur_filter"));
  }
  SECTION("resnet50: the first block's conv2 and downsample of layer2-4") {
    auto model = make_resnet("resnet50");
    REQUIRE(apply_blurpool(*model) == 6);
    CHECK(blurred_modules(*model) ==
          std::set<std::string>{"layer2.0.conv2", "layer3.0.conv2", "layer4.0.conv2",
                                "layer2.0.downsample.0", "layer3.0.downsample.0",
                                "layer4.0.downsample.0"});
    const auto buffers = model->named_buffers();
    CHECK(buffers["layer2.0.conv2.blur_filter"].sizes() == at::IntArrayRef({128, 1, 3, 3}));
    CHECK(buffers["layer4.0.conv2.blur_filter"].sizes() == at::IntArrayRef({512, 1, 3, 3}));
    CHECK(buffers["layer2.0.downsample.0.blur_filter"].sizes() == at::IntArrayRef({256, 1, 3, 3}));
    CHECK(buffers["layer4.0.downsample.0.blur_filter"].sizes() == at::IntArrayRef({1024, 1, 3, 3}));
  }
  SECTION("a second call wraps nothing") {
    auto model = make_resnet("resnet18");
    REQUIRE(apply_blurpool(*model) == 6);
    CHECK(apply_blurpool(*model) == 0);
    CHECK(blurred_modules(*model).size() == 6);
  }
  SECTION("the small stem is never blurred; narrow nets get fewer wrappers") {
    auto small = make_resnet("resnet18", "small");
    CHECK(apply_blurpool(*small) == 6);
    // Width 1/8: layer2's first block sees 8 channels, layer3's 16, layer4's 32.
    auto narrow = make_resnet("resnet18", "small", 0.125);
    CHECK(apply_blurpool(*narrow) == 4);
    CHECK(blurred_modules(*narrow) == std::set<std::string>{"layer3.0.conv1", "layer4.0.conv1",
                                                            "layer3.0.downsample.0",
                                                            "layer4.0.downsample.0"});
  }
  SECTION("a conv whose parent cannot swap it is refused") {
    torch::nn::Sequential sequential(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 3).stride(2)));
    CHECK_THROWS_AS(apply_blurpool(*sequential), ffcv::ConfigError);
  }
}

TEST_CASE("the blurred model calls its wrappers in forward", "[model]") {
  torch::manual_seed(1);
  auto model = make_resnet("resnet18", "small", 0.25, 10);
  model->eval();
  const auto x = torch::randn({2, 3, 32, 32});
  torch::NoGradGuard no_grad;
  const auto before = model->forward(x);
  REQUIRE(apply_blurpool(*model) == 6);
  const auto after = model->forward(x);
  CHECK(after.sizes() == at::IntArrayRef({2, 10}));
  CHECK_FALSE(torch::allclose(before, after));
}

TEST_CASE("ResNet state layout equals torchvision's with FFCV's BlurPool", "[model]") {
  for (const std::string arch : {"resnet18", "resnet50"}) {
    INFO("arch: " << arch);
    Layout expected;
    if (!torchvision_layout(arch, expected)) return;
    auto model = make_resnet(arch);
    apply_blurpool(*model);
    const Layout ours = layout_of(*model);
    CHECK(expected.size() == ours.size());
    for (const auto& [name, shape] : expected) {
      INFO("torchvision key: " << name);
      const auto found = ours.find(name);
      REQUIRE(found != ours.end());
      CHECK(found->second == shape);
    }
    for (const auto& [name, shape] : ours) {
      INFO("our key: " << name);
      CHECK(expected.count(name) == 1);
    }
  }
}

TEST_CASE("BlurPoolConv2d is a depthwise blur followed by the wrapped conv", "[model]") {
  torch::manual_seed(2);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(16, 8, 3).stride(2).padding(1).bias(false));
  torch::nn::Conv2d pointwise(torch::nn::Conv2dOptions(16, 8, 1).stride(2).bias(true));
  const auto x = torch::randn({2, 16, 11, 13});
  const auto blur = reference_blur(16);

  BlurPoolConv2d wrapped(conv);
  CHECK(wrapped->blur_filter().sizes() == at::IntArrayRef({16, 1, 3, 3}));
  CHECK(torch::allclose(wrapped->blur_filter(), blur));
  CHECK(torch::allclose(wrapped->blur_filter().sum({1, 2, 3}), torch::ones({16})));
  CHECK_FALSE(wrapped->blur_filter().requires_grad());
  CHECK(wrapped->parameters().size() == 1);

  torch::NoGradGuard no_grad;
  const auto blurred = torch::conv2d(x, blur, {}, 1, 1, 1, 16);
  const auto expected = torch::conv2d(blurred, conv->weight, {}, 2, 1);
  const auto got = wrapped->forward(x);
  CHECK(got.sizes() == expected.sizes());
  CHECK(torch::allclose(got, expected, 1e-5, 1e-6));

  BlurPoolConv2d wrapped_pointwise(pointwise);
  const auto expected_pointwise =
      torch::conv2d(blurred, pointwise->weight, pointwise->bias, /*stride=*/{2, 2});
  CHECK(torch::allclose(wrapped_pointwise->forward(x), expected_pointwise, 1e-5, 1e-6));

  const auto channels_last = x.contiguous(at::MemoryFormat::ChannelsLast);
  CHECK(torch::allclose(wrapped->forward(channels_last), expected, 1e-5, 1e-6));
}

TEST_CASE("ResNet forward gives logits of the right shape", "[model]") {
  torch::manual_seed(3);
  SECTION("resnet18, imagenet stem") {
    auto model = make_resnet("resnet18");
    const auto logits = model->forward(torch::randn({2, 3, 64, 64}));
    CHECK(logits.sizes() == at::IntArrayRef({2, 1000}));
  }
  SECTION("resnet18, small stem, width 0.25, 10 classes, also channels_last") {
    auto model = make_resnet("resnet18", "small", 0.25, 10);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto x = torch::randn({4, 3, 28, 28});
    const auto logits = model->forward(x);
    CHECK(logits.sizes() == at::IntArrayRef({4, 10}));
    const auto logits_cl = model->forward(x.contiguous(at::MemoryFormat::ChannelsLast));
    CHECK(logits_cl.sizes() == at::IntArrayRef({4, 10}));
    CHECK(torch::allclose(logits, logits_cl, 1e-4, 1e-5));
  }
  SECTION("resnet18, small_strided stem: one 3x3 stride-2 conv, no max-pool") {
    auto model = make_resnet("resnet18", "small_strided", 0.25, 10);
    const auto modules = model->named_modules();
    auto* conv1 = modules["conv1"]->as<torch::nn::Conv2d>();
    REQUIRE(conv1 != nullptr);
    CHECK(conv1->weight.sizes() == at::IntArrayRef({16, 3, 3, 3}));
    CHECK(*conv1->options.stride() == at::IntArrayRef({2, 2}));
    // The stages see 14, 7, 4 and 2 px of a 28 px image: the stem's output is the first's input.
    const auto x = torch::randn({2, 3, 28, 28});
    CHECK(conv1->forward(x).sizes() == at::IntArrayRef({2, 16, 14, 14}));
    CHECK(model->forward(x).sizes() == at::IntArrayRef({2, 10}));
    CHECK(apply_blurpool(*model) == 6);  // the stem's 3 input channels are never blurred
  }
  SECTION("resnet50, small stem, width 0.25, with BlurPool, backward reaches every parameter") {
    auto model = make_resnet("resnet50", "small", 0.25, 10);
    apply_blurpool(*model);
    const auto logits = model->forward(torch::randn({2, 3, 32, 32}));
    CHECK(logits.sizes() == at::IntArrayRef({2, 10}));
    logits.sum().backward();
    for (const auto& item : model->named_parameters()) {
      INFO(item.key());
      CHECK(item.value().grad().defined());
    }
  }
}

TEST_CASE("the width multiplier scales the planes", "[model]") {
  auto half = make_resnet("resnet18", "imagenet", 0.5);
  const auto parameters = half->named_parameters();
  CHECK(parameters["conv1.weight"].sizes() == at::IntArrayRef({32, 3, 7, 7}));
  CHECK(parameters["layer4.1.conv2.weight"].sizes() == at::IntArrayRef({256, 256, 3, 3}));
  CHECK(parameters["fc.weight"].sizes() == at::IntArrayRef({1000, 256}));

  auto small = make_resnet("resnet50", "small", 0.25, 10);
  const auto small_parameters = small->named_parameters();
  CHECK(small_parameters["conv1.weight"].sizes() == at::IntArrayRef({16, 3, 3, 3}));
  CHECK(small_parameters["fc.weight"].sizes() == at::IntArrayRef({10, 512}));

  auto tiny = make_resnet("resnet18", "small", 0.001, 2);
  CHECK(tiny->named_parameters()["conv1.weight"].size(0) == 1);
}

TEST_CASE("ResNet initialisation follows torchvision", "[model]") {
  torch::manual_seed(4);
  auto model = make_resnet("resnet18");
  const auto parameters = model->named_parameters();
  // kaiming_normal_(fan_out, relu): std = sqrt(2 / (out_channels * k * k)).
  const auto w = parameters["layer3.1.conv2.weight"];
  const double expected_std = std::sqrt(2.0 / (256 * 9));
  CHECK(w.std().item<double>() == Approx(expected_std).epsilon(0.02));
  CHECK(w.mean().item<double>() == Approx(0.0).margin(expected_std * 0.01));
  CHECK(parameters["layer1.0.bn2.weight"].eq(1).all().item<bool>());
  CHECK(parameters["layer1.0.bn2.bias"].eq(0).all().item<bool>());
  // nn.Linear: weight and bias uniform in +-1/sqrt(fan_in).
  const double bound = 1.0 / std::sqrt(512.0);
  CHECK(parameters["fc.weight"].abs().max().item<double>() <= bound);
  CHECK(parameters["fc.bias"].abs().max().item<double>() <= bound);
}

TEST_CASE("unknown model options are refused with the allowed values", "[model]") {
  CHECK_THROWS_WITH(make_resnet("resnet34"),
                    Catch::Contains("resnet34") && Catch::Contains("resnet18, resnet50"));
  CHECK_THROWS_WITH(make_resnet("resnet18", "cifar"),
                    Catch::Contains("cifar") && Catch::Contains("imagenet, small, small_strided"));
  CHECK_THROWS_AS(make_resnet("resnet18", "small", 0.0), ffcv::ConfigError);
  CHECK_THROWS_AS(make_resnet("resnet18", "small", 1.0, 0), ffcv::ConfigError);
}

TEST_CASE("weight_decay_groups follows FFCV's 'bn' name rule", "[model]") {
  auto model = make_resnet("resnet18");
  apply_blurpool(*model);
  const auto base = torch::optim::SGDOptions(1.0).momentum(0.9).dampening(0).nesterov(false);
  const auto split = weight_decay_groups(*model, base, 5e-5, "bn");
  REQUIRE(split.groups.size() == 2);

  for (const auto& name : split.excluded_names) {
    INFO(name);
    CHECK(name.find("bn") != std::string::npos);
  }
  for (const auto& name : split.decayed_names) {
    INFO(name);
    CHECK(name.find("bn") == std::string::npos);
  }
  // 17 BatchNorms named bn* (stem + 8 blocks x 2), 2 parameters each.
  CHECK(split.excluded_names.size() == 34);
  // 20 convs + 3 downsample BatchNorms (2 each) + fc weight and bias.
  CHECK(split.decayed_names.size() == 28);
  CHECK(split.decayed_names.size() + split.excluded_names.size() ==
        model->named_parameters().size());
  CHECK(split.groups[0].params().size() == 28);
  CHECK(split.groups[1].params().size() == 34);

  const std::set<std::string> decayed(split.decayed_names.begin(), split.decayed_names.end());
  const std::set<std::string> excluded(split.excluded_names.begin(), split.excluded_names.end());
  CHECK(excluded.count("bn1.weight") == 1);
  CHECK(excluded.count("layer4.1.bn2.bias") == 1);
  for (const std::string layer : {"layer2", "layer3", "layer4"}) {
    CHECK(decayed.count(layer + ".0.downsample.1.weight") == 1);
    CHECK(decayed.count(layer + ".0.downsample.1.bias") == 1);
  }
  CHECK(decayed.count("fc.weight") == 1);
  CHECK(decayed.count("fc.bias") == 1);
  CHECK(decayed.count("layer2.0.conv1.conv.weight") == 1);

  // The tensors are the model's own, in the order of the names.
  const auto parameters = model->named_parameters();
  CHECK(split.groups[1].params()[0].is_same(parameters[split.excluded_names[0]]));
  CHECK(split.groups[0].params().back().is_same(parameters[split.decayed_names.back()]));

  const auto& decayed_options =
      static_cast<const torch::optim::SGDOptions&>(split.groups[0].options());
  const auto& excluded_options =
      static_cast<const torch::optim::SGDOptions&>(split.groups[1].options());
  CHECK(decayed_options.weight_decay() == 5e-5);
  CHECK(excluded_options.weight_decay() == 0.0);
  CHECK(decayed_options.momentum() == 0.9);
  CHECK(excluded_options.momentum() == 0.9);
  CHECK_FALSE(excluded_options.nesterov());

  torch::optim::SGD sgd(split.groups, base);
  CHECK(sgd.param_groups().size() == 2);
}

TEST_CASE("weight_decay_groups with an empty substring decays everything", "[model]") {
  auto model = make_resnet("resnet18", "small", 0.25, 10);
  const auto split =
      weight_decay_groups(*model, torch::optim::SGDOptions(0.1).momentum(0.9), 1e-4, "");
  REQUIRE(split.groups.size() == 2);
  CHECK(split.groups[0].params().size() == model->parameters().size());
  CHECK(split.groups[1].params().empty());
  CHECK(split.excluded_names.empty());

  // An optimizer accepts the empty group and steps.
  torch::optim::SGD sgd(split.groups, torch::optim::SGDOptions(0.1));
  const auto before = model->named_parameters()["fc.weight"].clone();
  model->forward(torch::randn({2, 3, 28, 28})).sum().backward();
  sgd.step();
  CHECK_FALSE(torch::equal(before, model->named_parameters()["fc.weight"]));
}
