// Training recipes: one TOML file describes a whole run (data, augmentation, model, schedules,
// optimizer, validation, logging, distribution, checkpoints).
//
// The sections and keys follow FFCV's train_imagenet.py configuration (fastargs sections
// data/resolution/lr/training/validation/logging/dist) plus the loader and model settings
// that script hard-codes, so the paper's recipes can be written down as they were run.
// docs/recipes.md lists every key with its default and meaning.
//
// Loading is strict: an unknown section or key, a value of the wrong type, an out-of-range
// number or an unknown choice is a ffcv::ConfigError whose one-line message names the file,
// line:column and key, and suggests the nearest valid name for a typo. A recipe that loads is
// therefore complete and consistent, and the trainer never re-checks it. A [grid] section
// describes several runs of the recipe and is read by grid.hpp; the recipe itself ignores it.
//
// Everything here is independent of LibTorch so that it builds and tests in seconds.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/train/recipe_schema.hpp"  // read_recipe_text

namespace ffcv::train {

// [data]: the datasets, the loader's settings (every key of ffcv/settings/loader_settings.hpp,
// one spelling for recipes, flags and ablations; the training set's order defaults to
// QUASI_RANDOM, the validation set is always read in order with its last batch kept) and the
// image pipeline's.
struct DataConfig : LoaderSettings {
  DataConfig() { order = "quasi_random"; }

  // The .beton files: paths (relative paths are kept as written) or http(s):// URLs, which are
  // always read through the process cache.
  std::string train;  // training set (required)
  std::string val;    // validation set (required)
  std::string image_field = "image";
  std::string label_field = "label";
  // Normalization on the 0..255 pixel scale, per RGB channel (ImageNet statistics by default).
  std::array<double, 3> mean = {123.675, 116.28, 103.53};
  std::array<double, 3> std = {58.395, 57.12, 57.375};
  std::string interpolation = "area";  // crop resize kernel: area | linear
  bool fast_dct = true;                // libjpeg-turbo's fast (less exact) inverse DCT
  // Where JPEGs are decoded: "cpu" (the loader's workers), "gpu" (the workers choose windows and
  // flips, nvJPEG decodes on the training GPU: ffcv/torch/gpu_image_decode.hpp) or "auto" (gpu
  // when training on CUDA with a build that has the GPU image path and a pipeline it can run,
  // cpu otherwise).
  std::string image_decode = "cpu";

  // Shared libraries of user operations (ffcv/steps/op_library.hpp), loaded before the pipelines
  // are built, so `augment.operations` can name their steps.
  std::vector<std::string> op_libraries;

  bool operator==(const DataConfig&) const = default;
};

// [augment]: the training-time random-resized crop and flip.
struct AugmentConfig {
  std::array<double, 2> scale = {0.08, 1.0};                 // crop area / image area
  std::array<double, 2> ratio = {0.75, 1.3333333333333333};  // crop aspect ratio (w/h)
  bool flip = true;                                          // horizontal flip with p = 0.5
  // More per-sample image operations after the flip, each "NAME[:key=value,...]".
  std::vector<std::string> operations;
  // Mixup (FFCV's ImageMixup + LabelMixup): weight ~ Beta(alpha, alpha); 0 turns it off.
  double mixup_alpha = 0.0;
  bool mixup_same_lambda = false;  // one weight per batch instead of one per sample

  bool operator==(const AugmentConfig&) const = default;
};

// [model]: a torchvision-style ResNet.
struct ModelConfig {
  std::string arch = "resnet18";  // resnet18 | resnet50
  double width = 1.0;             // channel-width multiplier
  // imagenet: 7x7 stride-2 conv + 3x3 max-pool; small: 3x3 stride-1 conv, no max-pool (for
  // 28-64 px images, where the ImageNet stem would discard most of the picture); small_strided:
  // 3x3 stride-2 conv, no max-pool (the same images at a quarter of small's cost).
  std::string stem = "imagenet";
  bool blurpool = true;  // blur before every strided conv with >= 16 input channels
  int num_classes = 1000;

  bool operator==(const ModelConfig&) const = default;
};

// [resolution]: progressive resizing of the training images (see schedules.hpp).
struct ResolutionConfig {
  int min_res = 160;   // side (px) up to and including epoch start_ramp
  int max_res = 160;   // side from epoch end_ramp on
  int start_ramp = 0;  // epoch
  int end_ramp = 0;    // epoch
  int round_to = 32;   // ramp values are rounded (half to even) to a multiple of this

  bool operator==(const ResolutionConfig&) const = default;
};

// [lr]: the learning-rate schedule (see schedules.hpp).
struct LrConfig {
  std::string schedule = "triangular";  // triangular (FFCV's "cyclic") | step
  double lr = 0.5;                      // peak learning rate (no per-256 scaling)
  double peak_epoch = 2;                // triangular: epoch at which lr is reached
  double start_factor = 1e-4;           // triangular: the first iteration uses start_factor * lr
  double step_ratio = 0.1;              // step: factor applied every step_length epochs
  int step_length = 30;                 // step: epochs per step

  bool operator==(const LrConfig&) const = default;
};

// [training]: optimizer (SGD), loss and execution settings.
struct TrainingConfig {
  int epochs = 30;
  int batch_size = 512;  // per process
  double momentum = 0.9;
  double weight_decay = 4e-5;
  // Parameters whose name contains this substring get no weight decay (FFCV's rule: "bn",
  // which spares the block BatchNorms but not the downsample ones); empty = decay everything.
  std::string wd_exclude = "bn";
  double label_smoothing = 0.1;
  std::string precision = "fp32";  // fp32 | fp16 (autocast + dynamic loss scaling) | bf16
  bool channels_last = true;
  bool cudnn_benchmark = true;
  // Bitwise-reproducible runs on CUDA, and exact resume there: deterministic cuDNN algorithms
  // and no autotuning (cudnn_benchmark is then ignored). Slower; CPU runs are always exact.
  bool deterministic = false;
  std::string device = "auto";  // auto | cpu | cuda
  int threads = 0;              // intra-op threads; 0 = all cores

  bool operator==(const TrainingConfig&) const = default;
};

// [validation]: evaluation on a center crop, optionally with flip test-time augmentation.
struct ValidationConfig {
  int batch_size = 512;
  int resolution = 256;       // output side (px) of the center crop
  double crop_ratio = 0.875;  // side of the center square / shorter image side
  bool tta = true;            // sum the logits of the image and its horizontal flip
  int every = 1;              // evaluate every N epochs and after the last; 0 = after the last only

  bool operator==(const ValidationConfig&) const = default;
};

// [logging]: where results go and how progress is shown.
struct LoggingConfig {
  std::string folder = "runs";    // each run writes into its own sub-folder of this one
  std::string progress = "auto";  // progress bar: auto (when stderr is a terminal) | always | never

  bool operator==(const LoggingConfig&) const = default;
};

// [dist]: data-parallel training over several processes.
struct DistConfig {
  int world_size = 1;
  std::string backend = "auto";  // auto | nccl | gloo
  std::string address = "localhost";
  int port = 12355;

  bool operator==(const DistConfig&) const = default;
};

// [checkpoint]: saving and resuming.
struct CheckpointConfig {
  int every = 1;       // save every N epochs (and after the last); 0 = never
  std::string resume;  // checkpoint to resume from; empty = start fresh

  bool operator==(const CheckpointConfig&) const = default;
};

// A complete, validated training configuration.
struct Recipe {
  DataConfig data;
  AugmentConfig augment;
  ModelConfig model;
  ResolutionConfig resolution;
  LrConfig lr;
  TrainingConfig training;
  ValidationConfig validation;
  LoggingConfig logging;
  DistConfig dist;
  CheckpointConfig checkpoint;

  std::string name;    // the recipe file's stem, e.g. "rn50_16_epochs"
  std::string source;  // the recipe file's path, as given

  bool operator==(const Recipe&) const = default;
};

// Reads the recipe at `path`, applies `overrides` in order, then checks the result.
//
// Each override is "section.key=value", the value written as in TOML (`training.epochs=5`,
// `augment.scale=[0.35,1]`, `model.arch="resnet50"`). Text that is not a TOML value is taken
// as a string (`model.arch=resnet50`, `data.train=/data/train.beton`), and so is any value given
// to a string key. Every key has a default except data.train and data.val.
// Throws ffcv::ConfigError with a one-line message.
Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides = {});

// The recipe as TOML text with every key written out (defaults included), so the run folder
// records exactly what ran: load_recipe of this text gives back an equal Recipe (name and
// source apart, which come from the file's path).
std::string recipe_to_toml(const Recipe& recipe);

// The valid keys, as "section.key", in the order docs/recipes.md and recipe_to_toml list them.
std::vector<std::string> recipe_keys();

}  // namespace ffcv::train
