// The trainer's parts against their formulas, and whole runs on a tiny dataset: resume,
// progressive resizing, the command line, two ranks over Gloo.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ffcv/torch/batch_feed.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/train/batch_input.hpp"
#include "ffcv/train/checkpoint.hpp"
#include "ffcv/train/distributed.hpp"
#include "ffcv/train/evaluate.hpp"
#include "ffcv/train/loss_scaler.hpp"
#include "ffcv/train/resnet.hpp"
#include "ffcv/train/run_log.hpp"
#include "ffcv/train/schedules.hpp"
#include "ffcv/train/sgd_update.hpp"
#include "ffcv/train/train_data.hpp"
#include "ffcv/train/train_step.hpp"
#include "ffcv/train/trainer.hpp"
#include "ffcv/util/errors.hpp"
#include "tiny_dataset.hpp"

#ifdef FFCV_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Sleep.h>
#endif

using namespace ffcv;
using namespace ffcv::train;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) result.push_back(line);
  }
  return result;
}

double json_number(const std::string& line, const std::string& key) {
  const std::size_t at = line.find("\"" + key + "\": ");
  REQUIRE(at != std::string::npos);
  return std::stod(line.substr(at + key.size() + 4));
}

// The [cuda] cases run only in the CTest entry trainer_cuda_cases, which is skipped (exit 77,
// trainer_main.cpp) without a CUDA device; run by hand without one, they fail saying so.
void require_gpu() {
  if (!torch::cuda::is_available()) FAIL("this case needs a CUDA device");
}

}  // namespace

TEST_CASE("label-smoothed cross-entropy equals (1-e) CE + e mean(-log p)", "[trainer]") {
  torch::manual_seed(3);
  const at::Tensor logits = torch::randn({6, 5}, torch::kFloat64);
  const at::Tensor labels = torch::tensor({0, 4, 2, 2, 1, 3}, torch::kInt64);
  const double eps = 0.1;
  const double loss =
      torch::nn::functional::cross_entropy(
          logits, labels, torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(eps))
          .item<double>();
  const at::Tensor log_p = torch::log_softmax(logits, 1);
  double expected = 0;
  for (int i = 0; i < 6; ++i) {
    const double nll = -log_p[i][labels[i].item<std::int64_t>()].item<double>();
    const double uniform = -log_p[i].mean().item<double>();
    expected += (1 - eps) * nll + eps * uniform;
  }
  CHECK(loss == Approx(expected / 6).epsilon(1e-12));
}

TEST_CASE("loss scaler unscales, skips non-finite steps, backs off and grows", "[trainer]") {
  LossScalerOptions options;
  options.enabled = true;
  options.init_scale = 1024;
  options.growth_interval = 3;
  LossScaler scaler(options, at::Device(at::kCPU));
  at::Tensor w = torch::ones({3}, torch::requires_grad());
  CHECK(scaler.scale(torch::tensor(2.0f)).item<float>() == 2048.0f);

  // A finite step: gradients come back divided by the scale.
  scaler.scale((w * torch::tensor({1.0f, 2.0f, 3.0f})).sum()).backward();
  CHECK(scaler.unscale_and_check({w}));
  CHECK(torch::allclose(w.grad(), torch::tensor({1.0f, 2.0f, 3.0f})));
  scaler.update();
  CHECK(scaler.current_scale() == 1024);

  // An overflow: the step is reported as skipped and the scale halves.
  w.mutable_grad() = torch::tensor({1.0f, std::numeric_limits<float>::infinity(), 0.0f});
  CHECK_FALSE(scaler.unscale_and_check({w}));
  scaler.update();
  CHECK(scaler.current_scale() == 512);
  CHECK(scaler.skipped_steps() == 1);

  // growth_interval clean steps in a row double it.
  for (int i = 0; i < 3; ++i) {
    w.mutable_grad() = torch::ones({3});
    CHECK(scaler.unscale_and_check({w}));
    scaler.update();
  }
  CHECK(scaler.current_scale() == 1024);

  // Disabled, it changes nothing.
  LossScaler off(LossScalerOptions{}, at::Device(at::kCPU));
  CHECK(off.scale(torch::tensor(2.0f)).item<float>() == 2.0f);
  w.mutable_grad() = torch::full({3}, std::numeric_limits<float>::quiet_NaN());
  CHECK(off.unscale_and_check({w}));
}

namespace {

// Two SGD optimizers over copies of the same parameters (two weight-decay groups, momentum,
// one channels_last 4-d tensor) on `device`, to step one by torch's SGD and the other by
// sgd_update() on the same gradients.
struct TwinOptimizers {
  std::vector<at::Tensor> reference_params, params;
  std::unique_ptr<torch::optim::SGD> reference, tested;

  explicit TwinOptimizers(at::Device device) {
    torch::manual_seed(11);
    const std::vector<at::Tensor> initial = {
        torch::randn({4, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast), torch::randn({7}),
        torch::randn({5, 2})};
    for (const at::Tensor& t : initial) {
      reference_params.push_back(t.to(device).clone().set_requires_grad(true));
      params.push_back(t.to(device).clone().set_requires_grad(true));
    }
    reference = make(reference_params);
    tested = make(params);
  }

  static std::unique_ptr<torch::optim::SGD> make(const std::vector<at::Tensor>& p) {
    torch::optim::SGDOptions base(0.1);
    base.momentum(0.9);
    auto decayed = std::make_unique<torch::optim::SGDOptions>(base);
    decayed->weight_decay(5e-4);
    auto plain = std::make_unique<torch::optim::SGDOptions>(base);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<at::Tensor>{p[0], p[2]}, std::move(decayed));
    groups.emplace_back(std::vector<at::Tensor>{p[1]}, std::move(plain));
    return std::make_unique<torch::optim::SGD>(groups, base);
  }

  void set_gradients(int step) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      const at::Tensor g =
          torch::sin(torch::arange(params[i].numel(), params[i].options().requires_grad(false)) *
                         (0.3 + step) +
                     static_cast<double>(i))
              .reshape(params[i].sizes());
      reference_params[i].mutable_grad() = g.clone();
      params[i].mutable_grad() = g.contiguous(params[i].suggest_memory_format()).clone();
    }
  }
};

}  // namespace

TEST_CASE("sgd_update steps like torch's SGD and skips a step the scaler flagged", "[trainer]") {
  TwinOptimizers twins(at::Device(at::kCPU));
  for (int step = 0; step < 3; ++step) {
    twins.set_gradients(step);
    twins.reference->step();
    sgd_update(*twins.tested, torch::zeros({1}));
  }
  for (std::size_t i = 0; i < twins.params.size(); ++i) {
    CHECK(torch::equal(twins.params[i], twins.reference_params[i]));
  }
  // Flagged: nothing moves.
  const at::Tensor before = twins.params[0].detach().clone();
  twins.set_gradients(3);
  sgd_update(*twins.tested, torch::ones({1}));
  CHECK(torch::equal(twins.params[0], before));
}

TEST_CASE(
    "sgd_update on CUDA: the fused update equals torch's SGD, a flagged step changes "
    "nothing, and the host does not wait",
    "[trainer][cuda]") {
  require_gpu();
  TwinOptimizers twins(at::Device(at::kCUDA, 0));
  const at::Tensor clean = torch::zeros({1}, torch::TensorOptions().device(at::kCUDA));
  const at::Tensor flagged = torch::ones({1}, torch::TensorOptions().device(at::kCUDA));
  for (int step = 0; step < 4; ++step) {
    twins.set_gradients(step);
    twins.reference->step();
    sgd_update(*twins.tested, clean);
  }
  for (std::size_t i = 0; i < twins.params.size(); ++i) {
    CHECK(torch::allclose(twins.params[i], twins.reference_params[i], 1e-6, 1e-6));
  }
  // The momentum buffers live in the optimizer's state (what checkpoints save).
  CHECK(twins.tested->state().size() == twins.params.size());

  std::vector<at::Tensor> before;
  for (const at::Tensor& p : twins.params) before.push_back(p.detach().clone());
  twins.set_gradients(4);
  sgd_update(*twins.tested, flagged);
  for (std::size_t i = 0; i < twins.params.size(); ++i) {
    CHECK(torch::equal(twins.params[i], before[i]));
  }
  // After the skipped step, the next clean one continues from the same momentum as torch's.
  twins.set_gradients(5);
  twins.reference->step();
  sgd_update(*twins.tested, clean);
  for (std::size_t i = 0; i < twins.params.size(); ++i) {
    CHECK(torch::allclose(twins.params[i], twins.reference_params[i], 1e-6, 1e-6));
  }
#ifdef FFCV_WITH_CUDA
  // Behind a kernel that keeps the device busy for a while, the update returns at once (torch's
  // SGD with a host-side skip would wait for the flag, i.e. for that kernel).
  torch::cuda::synchronize();
  at::cuda::sleep(2'000'000'000);  // cycles: about a second
  twins.set_gradients(6);
  sgd_update(*twins.tested, flagged);
  CHECK_FALSE(at::cuda::getCurrentCUDAStream().query());
  torch::cuda::synchronize();
#endif
}

TEST_CASE("TTA sums the logits of the image and its mirror, top-k counts", "[trainer]") {
  // A "model" that looks at the left half only: mirroring changes its answer.
  const auto forward = [](const at::Tensor& x) {
    const at::Tensor left = x.narrow(3, 0, x.size(3) / 2).mean({1, 2, 3});
    return torch::stack({left, -left}, 1);
  };
  const at::Tensor images = torch::rand({4, 3, 6, 8});
  const at::Tensor expected = forward(images) + forward(images.flip({3}));
  CHECK(torch::allclose(tta_logits(forward, images, true), expected));
  CHECK(torch::allclose(tta_logits(forward, images, false), forward(images)));

  const at::Tensor logits = torch::tensor({9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0,   // label 0: top-1
                                           1.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0,   // label 4: top-5
                                           1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0})  // label 0: neither
                                .view({3, 7});
  const TopKCounts counts = count_correct(logits, torch::tensor({0, 4, 0}));
  CHECK(counts.top1 == 1);
  CHECK(counts.top5 == 2);
}

TEST_CASE("input normalizer: uint8 NHWC to normalised NCHW in channels_last", "[trainer]") {
  const at::Tensor images = torch::randint(0, 256, {2, 5, 4, 3}, torch::kUInt8);
  const InputNormalizer normalize({10, 20, 30}, {2, 4, 8}, at::Device(at::kCPU), at::kFloat, true);
  const ModelInput input = normalize.from_loader(images, torch::tensor({{3}, {1}}, torch::kInt64));
  REQUIRE(input.images.sizes() == at::IntArrayRef({2, 3, 5, 4}));
  CHECK(input.images.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(input.labels.sizes() == at::IntArrayRef({2}));
  for (int c = 0; c < 3; ++c) {
    const double mean = 10.0 * (c + 1), std = 2.0 * (1 << c);
    const at::Tensor expected = (images.select(3, c).to(torch::kFloat) - mean) / std;
    CHECK(torch::allclose(input.images.select(1, c), expected, 1e-5, 1e-5));
  }
}

TEST_CASE("checkpoint restores weights, momentum and position, other models are refused",
          "[trainer]") {
  test::TempDir dir;
  torch::manual_seed(1);
  ResNet model(ResNetOptions{"resnet18", 0.125, "small", 3});
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  LossScaler scaler(LossScalerOptions{true}, at::Device(at::kCPU));
  const at::Tensor x = torch::rand({4, 3, 16, 16});
  torch::nn::functional::cross_entropy(model->forward(x), torch::tensor({0, 1, 2, 0})).backward();
  optimizer.step();
  save_checkpoint(dir.file("c.pt"), *model, optimizer, scaler, {3, 5, 77}, "recipe text");

  ResNet other(ResNetOptions{"resnet18", 0.125, "small", 3});
  torch::optim::SGD other_optimizer(other->parameters(),
                                    torch::optim::SGDOptions(0.1).momentum(0.9));
  LossScaler other_scaler(LossScalerOptions{true, 8.0}, at::Device(at::kCPU));
  const TrainPosition position =
      load_checkpoint(dir.file("c.pt"), *other, other_optimizer, other_scaler);
  CHECK(position.epoch == 3);
  CHECK(position.batches_done == 5);
  CHECK(position.steps == 77);
  CHECK(other_scaler.current_scale() == 65536.0);
  const auto a = model->named_parameters(), b = other->named_parameters();
  for (const auto& item : a) CHECK(torch::equal(item.value(), b[item.key()]));
  // The momentum buffers: one more identical step keeps both models identical.
  for (auto* m : {&model, &other}) {
    (*m)->zero_grad();
    torch::nn::functional::cross_entropy((*m)->forward(x), torch::tensor({2, 1, 0, 0})).backward();
  }
  optimizer.step();
  other_optimizer.step();
  for (const auto& item : a) CHECK(torch::equal(item.value(), b[item.key()]));

  ResNet wider(ResNetOptions{"resnet18", 0.25, "small", 3});
  torch::optim::SGD wider_optimizer(wider->parameters(), torch::optim::SGDOptions(0.1));
  CHECK_THROWS_WITH(load_checkpoint(dir.file("c.pt"), *wider, wider_optimizer, other_scaler),
                    Catch::Contains("has shape"));
  test::write_file(dir.file("junk.pt"), {1, 2, 3});
  CHECK_THROWS_AS(load_checkpoint(dir.file("junk.pt"), *other, other_optimizer, other_scaler),
                  ConfigError);
}

TEST_CASE("a run trains, follows the resolution schedule and logs every epoch", "[trainer]") {
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  recipe.training.epochs = 3;
  recipe.resolution = {16, 24, 0, 2, 8};  // 16, then the ramp's midpoint 20 rounds to 16, 24
  RunOptions options;
  options.run_dir = dir.file("run");
  options.quiet = true;
  const RunSummary summary = run_training(recipe, options);
  CHECK(summary.finished);
  CHECK(summary.epochs_done == 3);
  CHECK(summary.steps == 3 * 8);
  CHECK(summary.val_top1 > 0.9);  // brightness separates the classes
  const auto epochs = lines_with(read_text(dir.file("run/log.jsonl")), "\"event\": \"epoch\"");
  REQUIRE(epochs.size() == 3);
  for (int e = 0; e < 3; ++e) {
    CHECK(json_number(epochs[e], "resolution") == resolution_at(recipe.resolution, e));
    CHECK(json_number(epochs[e], "lr") ==
          Approx(lr_at_iteration(recipe.lr, 3, e, 7, 8)).epsilon(1e-6));
  }
  CHECK(json_number(epochs[2], "val_top1") == Approx(summary.val_top1));
  const Recipe saved = load_recipe(dir.file("run/recipe.toml"));
  CHECK(saved.resolution == recipe.resolution);
  CHECK(read_text(dir.file("run/summary.json")).find("\"finished\": true") != std::string::npos);
}

namespace {

// Runs `recipe` stopped after 11 steps (epoch 1, batch 3 of 8), resumes it from its checkpoint,
// and checks that it ends exactly where the uninterrupted run `straight` did.
void check_resumed_run_matches(const test::TempDir& dir, const Recipe& recipe,
                               const RunSummary& straight) {
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("interrupted");
  options.stop_after_steps = 11;
  const RunSummary first = run_training(recipe, options);
  CHECK_FALSE(first.finished);
  CHECK(first.steps == 11);

  Recipe resume = recipe;
  resume.checkpoint.resume = dir.file("interrupted/checkpoint.pt");
  options.run_dir = dir.file("resumed");
  options.stop_after_steps = 0;
  const RunSummary second = run_training(resume, options);
  CHECK(second.finished);
  CHECK(second.steps == straight.steps);
  CHECK(second.parameter_checksum == straight.parameter_checksum);
  CHECK(second.val_top1 == straight.val_top1);
  // The summary is the whole run's: the last epoch's mean loss over all of its batches (3 of
  // them trained before the stop), as the uninterrupted run has it, and the training time of
  // both sessions (the first's, then the epochs the second logged).
  CHECK(second.train_loss == Approx(straight.train_loss).epsilon(1e-12));
  double resumed_seconds = 0;
  const auto resumed_epochs =
      lines_with(read_text(dir.file("resumed/log.jsonl")), "\"event\": \"epoch\"");
  REQUIRE(resumed_epochs.size() == 1);
  for (const std::string& line : resumed_epochs)
    resumed_seconds += json_number(line, "epoch_seconds");
  CHECK(first.train_seconds > 0);
  CHECK(second.train_seconds == Approx(first.train_seconds + resumed_seconds).epsilon(1e-6));
  const std::string summary_json = read_text(dir.file("resumed/summary.json"));
  CHECK(json_number(summary_json, "train_loss") == Approx(straight.train_loss).epsilon(1e-8));
  CHECK(json_number(summary_json, "train_seconds") == Approx(second.train_seconds).epsilon(1e-6));
}

}  // namespace

TEST_CASE("resuming gives the uninterrupted run's weights, and a finished run validates them again",
          "[trainer]") {
  test::TempDir dir;
  const Recipe recipe = test::tiny_recipe(dir);
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("straight");
  const RunSummary straight = run_training(recipe, options);
  REQUIRE(straight.finished);

  check_resumed_run_matches(dir, recipe, straight);

  // Resuming the finished run trains nothing and validates its final weights once.
  REQUIRE(straight.val_top1 > 0);
  Recipe again = recipe;
  again.checkpoint.resume = dir.file("straight/checkpoint.pt");
  options.run_dir = dir.file("again");
  const RunSummary summary = run_training(again, options);
  CHECK(summary.finished);
  CHECK(summary.steps == straight.steps);
  CHECK(summary.weights_digest == straight.weights_digest);
  CHECK(summary.val_top1 == straight.val_top1);
  CHECK(summary.val_top5 == straight.val_top5);
  CHECK(summary.val_loss == Approx(straight.val_loss).epsilon(1e-9));
  const std::string log = read_text(dir.file("again/log.jsonl"));
  CHECK(lines_with(log, "\"event\": \"epoch\"").empty());
  const auto validated = lines_with(log, "\"event\": \"validated\"");
  REQUIRE(validated.size() == 1);
  CHECK(json_number(validated[0], "val_top1") == Approx(straight.val_top1));
  CHECK(json_number(read_text(dir.file("again/summary.json")), "val_top1") ==
        Approx(straight.val_top1));
}

TEST_CASE("on a GPU with training.deterministic: runs repeat and resume bit for bit",
          "[trainer][cuda]") {
  require_gpu();
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  recipe.training.device = "cuda";
  recipe.training.precision = "fp16";  // the loss scaler's state is resumed too
  recipe.training.deterministic = true;
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("straight");
  const RunSummary straight = run_training(recipe, options);
  REQUIRE(straight.finished);
  options.run_dir = dir.file("again");
  const RunSummary again = run_training(recipe, options);
  CHECK(again.parameter_checksum == straight.parameter_checksum);
  check_resumed_run_matches(dir, recipe, straight);
}

TEST_CASE("ffcv run: strict recipes, overrides, two ranks over Gloo", "[trainer][cli]") {
  test::TempDir dir;
  const Recipe recipe = test::tiny_recipe(dir);
  train::write_text_file(dir.file("tiny.toml"), recipe_to_toml(recipe));
  std::string output;

  // A --set the recipe refuses is a bad command line (exit 2), a missing recipe is not.
  CHECK(test::run_cli("run " + dir.file("tiny.toml") + " --set training.epoch=3", output) == 2);
  CHECK_THAT(output, Catch::Contains("did you mean 'training.epochs'"));
  CHECK(test::run_cli("run " + dir.file("missing.toml"), output) == 1);
  CHECK(test::run_cli("run " + dir.file("tiny.toml") + " --print-recipe --set lr.lr=0.25",
                      output) == 0);
  CHECK_THAT(output, Catch::Contains("lr = 0.25"));

  const std::string run_dir = dir.file("two-ranks");
  const int status =
      test::run_cli("run " + dir.file("tiny.toml") +
                        " --nproc 2 --set training.batch_size=4 --output-dir " + run_dir,
                    output);
  INFO(output);
  REQUIRE(status == 0);
  const std::string summary = read_text(run_dir + "/summary.json");
  CHECK(summary.find("\"replicas_identical\": true") != std::string::npos);
  CHECK(summary.find("\"world_size\": 2") != std::string::npos);
  CHECK(json_number(summary, "val_top1") > 0.9);
  // Each rank trains 32 samples in batches of 4: 8 steps per epoch.
  CHECK(json_number(summary, "steps") == 16);
}

namespace {

struct TrainedPrecision {
  RunSummary summary;
  std::vector<std::string> epochs;  // the log's epoch lines
};

// The tiny recipe trained on `device` in `precision` for `epochs`, in DIR/run-PRECISION.
RunSummary train_tiny(const test::TempDir& dir, const std::string& device,
                      const std::string& precision, int epochs) {
  Recipe recipe = test::tiny_recipe(dir);
  recipe.training.device = device;
  recipe.training.precision = precision;
  recipe.training.epochs = epochs;
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("run-" + precision);
  return run_training(recipe, options);
}

}  // namespace

// Mixed precision on the CPU, judged against fp32 on the same problem. The problem is large
// enough for the judgement to be about precision: the tiny recipe's 8 steps per epoch leave
// BatchNorm's running statistics far from the batch statistics, so its validation accuracy
// flips between 0.5 and 1 from epoch to epoch with any change of rounding (native bf16
// instructions or their emulation give different results). Here: 384 samples in batches of 16
// at one resolution, 72 steps. CTest also runs these cases with oneDNN and ATen capped below
// native bf16 (tests/CMakeLists.txt), so both CPU paths are covered on a machine that has it.
namespace {

TrainedPrecision train_precision_problem(const test::TempDir& dir, const std::string& precision) {
  Recipe recipe = test::tiny_recipe(dir);
  test::write_tiny_dataset(dir.file("train.beton"), 384, 0);
  test::write_tiny_dataset(dir.file("val.beton"), 96, 1);
  recipe.training.batch_size = 16;
  recipe.resolution = {24, 24, 0, 1, 8};
  recipe.training.epochs = 3;
  recipe.training.precision = precision;
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("run-" + precision);
  TrainedPrecision trained{run_training(recipe, options), {}};
  trained.epochs = lines_with(read_text(options.run_dir + "/log.jsonl"), "\"event\": \"epoch\"");
  return trained;
}

std::string cpu_path() {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  const char* aten = std::getenv("ATEN_CPU_CAPABILITY");
  return std::string("ONEDNN_MAX_CPU_ISA=") + (isa ? isa : "(native)") +
         " ATEN_CPU_CAPABILITY=" + (aten ? aten : "(native)");
}

// Trains fp32 and `precision` on the precision problem; checks that `precision` ends within 5 of
// the 96 validation samples of fp32, and returns its epoch records.
std::vector<std::string> check_trains_like_fp32(const std::string& precision) {
  test::TempDir dir;
  const TrainedPrecision fp32 = train_precision_problem(dir, "fp32");
  const TrainedPrecision trained = train_precision_problem(dir, precision);
  INFO(precision << " on " << cpu_path());
  REQUIRE(trained.summary.finished);
  REQUIRE(trained.epochs.size() == 3);
  CHECK(fp32.summary.val_top1 > 0.9);
  CHECK(trained.summary.val_top1 >= fp32.summary.val_top1 - 0.05);
  return trained.epochs;
}

}  // namespace

TEST_CASE("bf16 autocast on the CPU trains about as well as fp32", "[trainer][precision]") {
  // bf16 needs no loss scaling.
  for (const std::string& epoch : check_trains_like_fp32("bf16")) {
    CHECK(json_number(epoch, "loss_scale") == 1);
  }
}

TEST_CASE("fp16 on the CPU scales the loss and trains about as well as fp32",
          "[trainer][precision]") {
  const std::vector<std::string> epochs = check_trains_like_fp32("fp16");
  // GradScaler's 2^16 to start, halved on each overflow: a power of two, not above 2^16.
  const double scale = json_number(epochs[0], "loss_scale");
  CHECK(scale >= 1024);
  CHECK(scale <= 65536);
  CHECK(std::exp2(std::round(std::log2(scale))) == scale);
}

TEST_CASE("mixup and user operations from a library in a recipe", "[trainer]") {
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  recipe.training.epochs = 3;
  recipe.augment.mixup_alpha = 0.4;
  recipe.data.op_libraries = {FFCV_EXAMPLE_OPS_PATH};
  recipe.augment.operations = {"swap_channels:order=[2,1,0]"};
  RunOptions options;
  options.quiet = true;
  options.run_dir = dir.file("run");
  const RunSummary summary = run_training(recipe, options);
  CHECK(summary.finished);
  CHECK(summary.val_top1 > 0.8);  // brightness survives both mixing and swapping channels
  const Recipe saved = load_recipe(dir.file("run/recipe.toml"));
  CHECK(saved.augment == recipe.augment);
  CHECK(saved.data.op_libraries == recipe.data.op_libraries);

  recipe.augment.operations = {"swap_chanels"};
  CHECK_THROWS_WITH(run_training(recipe, options),
                    Catch::Contains("augment.operations") && Catch::Contains("swap_chanels"));
}

TEST_CASE("the mixup loss weighs both labels' cross-entropies", "[trainer]") {
  const InputNormalizer normalize({0, 0, 0}, {64, 64, 64}, at::Device(at::kCPU), at::kFloat, false);
  const at::Tensor rows = torch::tensor({2.0f, 0.0f, 0.25f, 1.0f, 1.0f, 0.5f}).view({2, 3});
  torch::manual_seed(4);
  const ModelInput input =
      normalize.from_loader(torch::randint(0, 256, {2, 8, 8, 3}, torch::kUInt8), rows);
  CHECK(torch::equal(input.labels, torch::tensor({2, 1}, torch::kInt64)));
  CHECK(torch::equal(input.partner_labels, torch::tensor({0, 1}, torch::kInt64)));
  CHECK(torch::allclose(input.mix_weights, torch::tensor({0.25f, 0.5f})));

  Recipe recipe;
  recipe.model = {"resnet18", 0.125, "small", false, 3};
  recipe.training.label_smoothing = 0.1;
  Communicator communicator(RankInfo{}, "gloo");
  TrainStep step(recipe, at::Device(at::kCPU), communicator);
  at::Tensor log_p;
  {
    torch::NoGradGuard no_grad;
    log_p = torch::log_softmax(step.model()->forward(input.images), 1).to(torch::kFloat64);
  }
  // (1 - e) * nll + e * mean(-log p), for each label, mixed by the weight.
  const auto smoothed = [&](int i, std::int64_t label) {
    return 0.9 * -log_p[i][label].item<double>() + 0.1 * -log_p[i].mean().item<double>();
  };
  const double expected = (0.25 * smoothed(0, 2) + 0.75 * smoothed(0, 0) + 0.5 * smoothed(1, 1) +
                           0.5 * smoothed(1, 1)) /
                          2;
  const StepResult result = step(input, 0.0);
  CHECK(result.loss.item<double>() == Approx(expected).epsilon(1e-5));
}

// The same tiny runs on a GPU (skipped without one): every precision trains, and NCCL, which
// cannot put two ranks on one GPU, is refused with a clear error before any rank starts it.
TEST_CASE("on a GPU: each precision trains the tiny model, NCCL needs a GPU per rank",
          "[trainer][cuda]") {
  require_gpu();
  test::TempDir dir;
  for (const char* precision : {"fp32", "fp16", "bf16"}) {
    // cuDNN's kernels are not bitwise reproducible, and after the CPU tests' 16 steps the
    // BatchNorm running statistics are still far from the batch statistics: evaluation then
    // sometimes predicts one class. Six epochs let them settle.
    const RunSummary summary = train_tiny(dir, "cuda", precision, 6);
    INFO(precision << "\n" << read_text(summary.run_dir + "/log.jsonl"));
    CHECK(summary.finished);
    CHECK(summary.val_top1 > 0.9);
  }

  if (torch::cuda::device_count() < 2) {
    Recipe recipe = test::tiny_recipe(dir);
    recipe.training.device = "cuda";
    train::write_text_file(dir.file("gpu.toml"), recipe_to_toml(recipe));
    std::string output;
    CHECK(test::run_cli("run " + dir.file("gpu.toml") + " --nproc 2 --output-dir " +
                            dir.file("two-ranks-one-gpu"),
                        output) == 1);
    CHECK_THAT(output, Catch::Contains("NCCL needs a GPU of its own per rank"));
  }
}

// Evaluation fed by the device stages (copy, normalise and layout on the transfer stream) against
// the same model evaluated on batches prepared on the CPU and copied synchronously.
TEST_CASE("on a GPU: evaluating through the device stages equals evaluating CPU-prepared batches",
          "[trainer][cuda]") {
  require_gpu();
  test::TempDir dir;
  const at::Device cuda(at::kCUDA, 0);
  for (const char* precision : {"fp32", "fp16"}) {
    for (const bool channels_last : {true, false}) {
      Recipe recipe = test::tiny_recipe(dir);
      recipe.training.device = "cuda";
      recipe.training.precision = precision;
      recipe.training.channels_last = channels_last;
      Communicator comm(RankInfo{}, "gloo");
      TrainStep step(recipe, cuda, comm);
      TrainData data(recipe, ShardSpec{}, 24, torch_adapter::pinned_allocator());
      const InputNormalizer staged(recipe.data.mean, recipe.data.std, cuda, step.input_dtype(),
                                   channels_last);
      step.model()->train();
      for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
        torch_adapter::BatchFeed feed(data.train().epoch(epoch), cuda, staged.stages(data.train()));
        while (auto tensors = feed.next()) step(staged((*tensors)[0], (*tensors)[1]), 0.05);
      }
      step.model()->eval();
      const EvalResult on_device =
          evaluate([&](const at::Tensor& images) { return step.forward_eval(images); }, data.val(),
                   0, staged, true, comm);
      const InputNormalizer on_host(recipe.data.mean, recipe.data.std, at::Device(at::kCPU),
                                    at::kFloat, channels_last);
      const EvalResult reference = evaluate(
          [&](const at::Tensor& images) {
            return step.forward_eval(images.to(cuda, step.input_dtype())).cpu();
          },
          data.val(), 0, on_host, true, comm);
      INFO(precision << (channels_last ? ", channels_last" : ", NCHW") << ": device stages top-1 "
                     << on_device.top1 << " loss " << on_device.loss << "; CPU-prepared top-1 "
                     << reference.top1 << " loss " << reference.loss);
      CHECK(on_device.samples == 30);
      CHECK(on_device.top1 == reference.top1);
      CHECK(on_device.loss == Approx(reference.loss).epsilon(0.02).margin(1e-3));
    }
  }
}

TEST_CASE("data.image_decode: gpu is refused where it cannot run, auto falls back to the CPU",
          "[trainer][gpu_decode]") {
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  recipe.data.image_decode = "gpu";
  CHECK_THROWS_WITH(
      TrainData(recipe, ShardSpec{}, 16, std::nullopt),
      Catch::Contains("data.image_decode = \"gpu\"") && Catch::Contains("not a CUDA GPU"));
  recipe.data.image_decode = "auto";
  const TrainData data(recipe, ShardSpec{}, 16, std::nullopt);
  CHECK_FALSE(data.decodes_on_gpu());
  recipe.augment.operations = {"cutout:size=4"};
  recipe.data.image_decode = "gpu";
  CHECK_THROWS_AS(TrainData(recipe, ShardSpec{}, 16,
                            torch_adapter::pinned_allocator().value_or(BatchAllocator{})),
                  ConfigError);
}

// The GPU image path end to end in the trainer: JPEG datasets, windows and flips chosen on the
// workers, decoded by nvJPEG, through progressive resizing (16 -> 24 px) and evaluation.
TEST_CASE("on a GPU: training and evaluation through the GPU image path",
          "[trainer][cuda][gpu_decode]") {
  require_gpu();
  test::TempDir dir;
  Recipe recipe = test::tiny_recipe(dir);
  test::write_tiny_dataset(recipe.data.train, 64, 0, ImageWriteMode::kJpg);
  test::write_tiny_dataset(recipe.data.val, 30, 1, ImageWriteMode::kJpg);
  recipe.training.device = "cuda";
  recipe.data.image_decode = "gpu";
  const at::Device cuda(at::kCUDA, 0);
  Communicator comm(RankInfo{}, "gloo");
  TrainStep step(recipe, cuda, comm);
  TrainData data(recipe, ShardSpec{}, 16, torch_adapter::pinned_allocator());
  REQUIRE(data.decodes_on_gpu());
  const InputNormalizer normalize(recipe.data.mean, recipe.data.std, cuda, step.input_dtype(),
                                  recipe.training.channels_last);
  step.model()->train();
  for (std::uint64_t epoch = 0; epoch < 6; ++epoch) {
    data.set_train_resolution(epoch < 3 ? 16 : 24);
    torch_adapter::BatchFeed feed(data.train().epoch(epoch), cuda, normalize.stages(data.train()));
    while (auto tensors = feed.next()) {
      const ModelInput input = normalize((*tensors)[0], (*tensors)[1]);
      CHECK(input.images.size(2) == (epoch < 3 ? 16 : 24));
      step(input, 0.05);
    }
  }
  step.model()->eval();
  const auto forward = [&](const at::Tensor& images) { return step.forward_eval(images); };
  const EvalResult on_gpu = evaluate(forward, data.val(), 0, normalize, false, comm);
  Recipe cpu_recipe = recipe;
  cpu_recipe.data.image_decode = "cpu";
  TrainData cpu_data(cpu_recipe, ShardSpec{}, 16, torch_adapter::pinned_allocator());
  const EvalResult on_cpu = evaluate(forward, cpu_data.val(), 0, normalize, false, comm);
  INFO("GPU path top-1 " << on_gpu.top1 << ", CPU path top-1 " << on_cpu.top1);
  CHECK(on_gpu.samples == 30);
  CHECK(on_gpu.top1 > 0.9);
  CHECK(std::abs(on_gpu.top1 - on_cpu.top1) <= 2.0 / 30 + 1e-9);
}
