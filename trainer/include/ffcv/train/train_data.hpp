// The two loaders a recipe trains and evaluates on, built from the recipe's [data] and
// [augment] sections, FFCV's ImageNet pipelines:
//
//   train  image: random_resized_crop(resolution, scale, ratio) -> random_horizontal_flip
//                 -> augment.operations -> [image_mixup]
//          label: int -> [label_mixup: float32 (label, partner's label, weight)]
//          order, drop_last and the rest from the recipe's loader settings, sharded by rank
//   val    image: center_crop(validation.resolution, crop_ratio)
//          label: int
//          sequential, keep the last partial batch, sharded by rank
//
// Both produce uint8 [N, H, W, 3] images and int64 [N, 1] labels (float32 [N, 3] with mixup);
// data.op_libraries are loaded first. Normalisation and the layout
// change happen on the training device (see batch_input.hpp), as FFCV does them on the GPU.
// Progressive resizing changes the train crop's output size between epochs.
//
// With data.image_decode = gpu (or auto on a GPU) the image pipelines are the GPU image path's
// (ffcv/torch/gpu_image_decode.hpp): random_resized_crop_encoded with the flip drawn inside it,
// and center_crop_encoded; their host records are decoded, cropped and resized on the GPU by
// the first device step (batch_input.hpp), with the same windows and flips as above.
#pragma once

#include <memory>
#include <optional>

#include "ffcv/decoders.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/train/recipe.hpp"

namespace ffcv::train {

// Names of the loader outputs the trainer reads.
inline constexpr const char* kImageOutput = "image";
inline constexpr const char* kLabelOutput = "label";

struct ShardSpec {
  int rank = 0;
  int world_size = 1;
};

class TrainData {
 public:
  // Opens both files (FormatError / ConfigError when they do not fit the recipe: missing
  // fields, a label field that is not an Int). `allocator` is where batch memory comes from
  // (pinned host memory when training on a GPU; data.image_decode = gpu or auto takes a given
  // allocator to mean training on a GPU). With `views` > 1 the train images are that
  // many random-resized crops of each sample from one decode (random_resized_crops, flipped
  // with augment.flip), uint8 [N, views, H, W, 3]: one view per model of a shared grid group
  // whose points differ in their seeds. Views take no augment.operations and no mixup.
  // data.num_workers 0 gives every available core to the workers; the trainer resolves it to
  // its share of the machine first (resolve_workers).
  TrainData(const Recipe& recipe, ShardSpec shard, int initial_resolution,
            std::optional<BatchAllocator> allocator, int views = 1);

  Loader& train() { return *train_; }
  Loader& val() { return *val_; }
  // The train crop size for the epochs that start from now on; call between epochs.
  void set_train_resolution(int resolution);
  int train_resolution() const { return crop_->output_height(); }
  // Whether the images are decoded on the GPU (data.image_decode): the image outputs are then
  // the host records of random_resized_crop_encoded / center_crop_encoded, which
  // InputNormalizer::stages finishes with decode_crops.
  bool decodes_on_gpu() const { return gpu_decode_; }

 private:
  void build_gpu_loaders(const Recipe& recipe, ShardSpec shard, int initial_resolution,
                         std::optional<BatchAllocator> allocator);
  void build_val_loader(const Recipe& recipe, ShardSpec shard,
                        std::optional<BatchAllocator> allocator, std::shared_ptr<Decoder> crop);

  bool gpu_decode_ = false;
  std::shared_ptr<ResizableDecoder> crop_;
  std::unique_ptr<Loader> train_;
  std::unique_ptr<Loader> val_;
};

}  // namespace ffcv::train
