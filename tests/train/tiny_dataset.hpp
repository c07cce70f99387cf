// A tiny two-class image dataset for trainer tests: class 1 images are brighter than class 0,
// so a few iterations of training already separate them.
#pragma once

#include <string>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/train/recipe.hpp"
#include "test_support.hpp"

namespace ffcv::test {

inline void write_tiny_dataset(const std::string& path, std::uint64_t samples, std::uint64_t seed,
                               ImageWriteMode mode = ImageWriteMode::kRaw) {
  RgbImageOptions options;
  options.write_mode = mode;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(options)},
                       {"label", std::make_shared<IntField>()}})
      .write(FunctionSource(samples, [seed](std::uint64_t i) {
        const std::int64_t label = static_cast<std::int64_t>((i * 7 + seed) % 2);
        RgbImage image = gradient_image(20 + static_cast<int>(i % 3) * 4, 20, i + seed);
        for (auto& p : image.pixels) p = static_cast<std::uint8_t>(label ? 128 + p / 2 : p / 2);
        return std::vector<FieldValue>{image, label};
      }));
}

// A small, bitwise-reproducible CPU recipe over `train` and `val`: a ResNet-18 of width 1/8 with
// the small stem, 16 -> 24 px over 2 epochs, one intra-op thread, runs under `dir`/runs.
inline train::Recipe small_model_recipe(const TempDir& dir, const std::string& train,
                                        const std::string& val) {
  train::Recipe recipe;
  recipe.data.train = train;
  recipe.data.val = val;
  recipe.data.num_workers = 2;
  recipe.data.order = "random";
  recipe.augment.scale = {0.5, 1.0};
  recipe.model.width = 0.125;
  recipe.model.stem = "small";
  recipe.resolution = {16, 24, 0, 1, 8};
  recipe.lr.lr = 0.1;
  recipe.lr.peak_epoch = 1;
  recipe.training.epochs = 2;
  recipe.training.threads = 1;
  recipe.training.device = "cpu";  // bitwise-reproducible, and the same on machines with a GPU
  recipe.validation.resolution = 24;
  recipe.logging.folder = dir.file("runs");
  recipe.logging.progress = "never";
  return recipe;
}

// A recipe for the tiny dataset in `dir` (written here): two classes, batches of 8.
inline train::Recipe tiny_recipe(const TempDir& dir) {
  write_tiny_dataset(dir.file("train.beton"), 64, 0);
  write_tiny_dataset(dir.file("val.beton"), 30, 1);
  train::Recipe recipe = small_model_recipe(dir, dir.file("train.beton"), dir.file("val.beton"));
  recipe.name = "tiny";
  recipe.data.mean = {96, 96, 96};
  recipe.data.std = {64, 64, 64};
  recipe.model.num_classes = 2;
  recipe.training.batch_size = 8;
  recipe.training.weight_decay = 5e-4;
  recipe.validation.batch_size = 16;
  recipe.checkpoint.every = 1;
  return recipe;
}

}  // namespace ffcv::test
