#include "ffcv/train/train_data.hpp"

#include <thread>

#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/steps/op_library.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/torch/gpu_image_decode.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::train {
namespace {

std::shared_ptr<ResizableDecoder> make_crop(const std::string& name, const OpParams& params) {
  auto decoder =
      std::dynamic_pointer_cast<ResizableDecoder>(OpRegistry::global().make_decoder(name, params));
  if (!decoder) throw ConfigError(name + " is not a resizable decoder");
  return decoder;
}

OpParams crop_params(const Recipe& recipe, int size) {
  OpParams params;
  params.set("size", std::int64_t{size});
  params.set("interpolation", recipe.data.interpolation);
  params.set("fast_dct", recipe.data.fast_dct);
  return params;
}

void check_fields(const Loader& loader, const Recipe& recipe) {
  const Reader& reader = loader.reader();
  const auto& fields = reader.fields();
  for (const auto& field : fields) {
    if (field.name == recipe.data.label_field &&
        dynamic_cast<const IntField*>(field.field.get()) == nullptr) {
      throw ConfigError(reader.path() + ": label field '" + field.name + "' is " +
                        field.field->type_name() + ", the trainer needs an Int field");
    }
  }
}

// The options both loaders share, from the recipe's loader settings.
LoaderOptions base_options(const Recipe& recipe, const std::string& path, ShardSpec shard,
                           std::uint64_t batch_size) {
  LoaderPlace place;
  place.location = path;
  place.batch_size = batch_size;
  place.rank = static_cast<std::uint32_t>(shard.rank);
  place.world_size = static_cast<std::uint32_t>(shard.world_size);
  return loader_options(recipe.data, place);
}

std::vector<PipelineSpec> pipelines(const Recipe& recipe, std::shared_ptr<Decoder> image,
                                    std::vector<std::shared_ptr<Operation>> image_ops) {
  return {
      {kImageOutput, recipe.data.image_field, std::move(image), std::move(image_ops)},
      {kLabelOutput, recipe.data.label_field, OpRegistry::global().make_decoder("int", {}), {}}};
}

// The encoded crops' parameters: no DCT options, the GPU decodes whole frames.
OpParams encoded_params(const Recipe& recipe, int size) {
  OpParams params;
  params.set("size", std::int64_t{size});
  params.set("interpolation", recipe.data.interpolation);
  return params;
}

// Whether the recipe's images are decoded on the GPU (data.image_decode). "gpu" refuses what the
// GPU image path cannot run; "auto" falls back to the CPU then.
bool image_decode_on_gpu(const Recipe& recipe, bool on_cuda, int views) {
  const std::string& choice = recipe.data.image_decode;
  if (choice == "cpu") return false;
  std::string why_not;
  if (!on_cuda)
    why_not = "the training device is not a CUDA GPU";
  else if (!torch_adapter::gpu_image_decode_built()) {
    why_not = "this build has no GPU image path (nvJPEG was not found when it was configured)";
  } else if (views > 1) {
    why_not = "grid.share_seeds' multi-view crops run on the CPU";
  } else if (!recipe.augment.operations.empty()) {
    why_not = "augment.operations run on decoded pixels on the CPU";
  } else if (recipe.augment.mixup_alpha > 0) {
    why_not = "mixup runs on decoded pixels on the CPU";
  }
  if (why_not.empty()) return true;
  if (choice == "gpu") throw ConfigError("data.image_decode = \"gpu\": " + why_not);
  return false;
}

}  // namespace

TrainData::TrainData(const Recipe& recipe, ShardSpec shard, int initial_resolution,
                     std::optional<BatchAllocator> allocator, int views)
    : gpu_decode_(image_decode_on_gpu(recipe, allocator.has_value(), views)) {
  for (const std::string& library : recipe.data.op_libraries) load_op_library(library);
  if (gpu_decode_) {
    build_gpu_loaders(recipe, shard, initial_resolution, allocator);
    return;
  }
  OpParams train_crop = crop_params(recipe, initial_resolution);
  train_crop.set("scale", std::vector<double>{recipe.augment.scale[0], recipe.augment.scale[1]});
  train_crop.set("ratio", std::vector<double>{recipe.augment.ratio[0], recipe.augment.ratio[1]});
  if (views > 1) {
    if (!recipe.augment.operations.empty() || recipe.augment.mixup_alpha > 0) {
      throw ConfigError(
          "grid.share_seeds: the points' crops come from one multi-view decode, which takes no "
          "augment.operations and no mixup; set grid.share_seeds = false");
    }
    train_crop.set("views", std::int64_t{views});
    train_crop.set("flip", recipe.augment.flip);
    crop_ = make_crop("random_resized_crops", train_crop);
  } else {
    crop_ = make_crop("random_resized_crop", train_crop);
  }
  std::vector<std::shared_ptr<Operation>> augment;
  if (recipe.augment.flip && views <= 1) {
    augment.push_back(OpRegistry::global().make_operation("random_horizontal_flip", {}));
  }
  for (const std::string& text : recipe.augment.operations) {
    try {
      const OpSpec spec = parse_op_spec(text);
      augment.push_back(OpRegistry::global().make_operation(spec.name, spec.params));
    } catch (const ConfigError& error) {
      throw ConfigError("augment.operations: " + std::string(error.what()));
    }
  }
  LoaderOptions train_options = base_options(
      recipe, recipe.data.train, shard, static_cast<std::uint64_t>(recipe.training.batch_size));
  train_options.allocator = allocator;
  std::vector<PipelineSpec> train_pipelines = pipelines(recipe, crop_, std::move(augment));
  if (recipe.augment.mixup_alpha > 0) {
    // Image and label mixups of one group draw the same partners and weights.
    const OpParams mixup(
        {{"alpha", recipe.augment.mixup_alpha}, {"same_lambda", recipe.augment.mixup_same_lambda}});
    train_pipelines[0].batch_operations = {
        OpRegistry::global().make_batch_operation("image_mixup", mixup)};
    train_pipelines[1].batch_operations = {
        OpRegistry::global().make_batch_operation("label_mixup", mixup)};
  }
  train_ = std::make_unique<Loader>(recipe.data.train, std::move(train_pipelines), train_options);
  check_fields(*train_, recipe);

  OpParams val_crop = crop_params(recipe, recipe.validation.resolution);
  val_crop.set("ratio", recipe.validation.crop_ratio);
  build_val_loader(recipe, shard, allocator, make_crop("center_crop", val_crop));
}

void TrainData::build_val_loader(const Recipe& recipe, ShardSpec shard,
                                 std::optional<BatchAllocator> allocator,
                                 std::shared_ptr<Decoder> crop) {
  // Validation sees every sample once, in order.
  LoaderOptions val_options = base_options(
      recipe, recipe.data.val, shard, static_cast<std::uint64_t>(recipe.validation.batch_size));
  val_options.order.kind = OrderKind::kSequential;
  val_options.drop_last = false;
  val_options.allocator = allocator;
  val_ = std::make_unique<Loader>(recipe.data.val, pipelines(recipe, std::move(crop), {}),
                                  val_options);
  check_fields(*val_, recipe);
}

void TrainData::build_gpu_loaders(const Recipe& recipe, ShardSpec shard, int initial_resolution,
                                  std::optional<BatchAllocator> allocator) {
  OpParams train_crop = encoded_params(recipe, initial_resolution);
  train_crop.set("scale", std::vector<double>{recipe.augment.scale[0], recipe.augment.scale[1]});
  train_crop.set("ratio", std::vector<double>{recipe.augment.ratio[0], recipe.augment.ratio[1]});
  train_crop.set("flip", recipe.augment.flip ? 0.5 : 0.0);
  crop_ = make_crop("random_resized_crop_encoded", train_crop);
  LoaderOptions train_options = base_options(
      recipe, recipe.data.train, shard, static_cast<std::uint64_t>(recipe.training.batch_size));
  train_options.allocator = allocator;
  train_ = std::make_unique<Loader>(recipe.data.train, pipelines(recipe, crop_, {}), train_options);
  check_fields(*train_, recipe);

  OpParams val_crop = encoded_params(recipe, recipe.validation.resolution);
  val_crop.set("ratio", recipe.validation.crop_ratio);
  build_val_loader(recipe, shard, allocator, make_crop("center_crop_encoded", val_crop));
}

void TrainData::set_train_resolution(int resolution) {
  crop_->set_output_size(resolution, resolution);
}

}  // namespace ffcv::train
