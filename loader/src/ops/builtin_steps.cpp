// Registers the built-in decoders and operations with OpRegistry.
#include "ffcv/steps/op_registry.hpp"
#include "field_decoders.hpp"
#include "ops.hpp"

namespace ffcv {

void register_builtin_steps(OpRegistry& registry) {
  registry.register_decoder("int", "Int field -> int64 [1]",
                            [](const OpParams&) { return std::make_shared<IntDecoder>(); });
  registry.register_decoder("float", "Float field -> float64 [1]",
                            [](const OpParams&) { return std::make_shared<FloatDecoder>(); });
  registry.register_decoder("ndarray", "NDArray field -> its dtype and shape",
                            [](const OpParams&) { return std::make_shared<NdArrayDecoder>(); });
  registry.register_decoder(
      "bytes", "Bytes/JSON field -> uint8 [max size + 8]: zero-padded payload, then its u64 length",
      [](const OpParams&) { return std::make_shared<BytesDecoder>(); });
  registry.register_decoder("image", "RGBImage field of one image size -> uint8 [H, W, 3]",
                            [](const OpParams&) { return std::make_shared<SimpleImageDecoder>(); });
  registry.register_decoder(
      "random_resized_crop",
      "RGBImage -> uint8 [size, size, 3]: torchvision's random crop (`scale`, `ratio`), window "
      "decode at reduced DCT scale, `interpolation` area|linear",
      make_random_resized_crop);
  registry.register_decoder(
      "random_resized_crops",
      "RGBImage -> uint8 [views, size, size, 3]: several random-resized crops of one decode",
      make_random_resized_crops);
  registry.register_decoder("center_crop",
                            "RGBImage -> uint8 [size, size, 3]: centred square of `ratio` "
                            "(224/256) x the short side, resized",
                            make_center_crop);
  registry.register_operation("random_horizontal_flip",
                              "mirror (H, W, C) left-right with `probability` (0.5)",
                              make_random_horizontal_flip);
  registry.register_operation(
      "normalize",
      "uint8 (..., C) -> `dtype` (float32|float16): (v - mean[c]) / std[c], 0-255 scale",
      make_normalize);
  registry.register_operation("convert", "cast every element to `dtype`", make_convert);
  registry.register_operation(
      "unpack_bits",
      "bit-packed uint8 (numpy.packbits) -> `count` values 0/1 in `dtype` (float32|float16|uint8)",
      make_unpack_bits);
  registry.register_operation("cutout", "fill a `size` square inside the image with `fill`",
                              make_cutout);
  registry.register_operation("random_translate",
                              "shift by up to `padding` px each way, exposing `fill`",
                              make_random_translate);
  registry.register_operation("random_brightness",
                              "scale pixels by U(1-magnitude, 1+magnitude) with `probability`",
                              make_random_brightness);
  registry.register_operation("random_contrast",
                              "blend with the mean gray level, factor as brightness",
                              make_random_contrast);
  registry.register_operation("random_saturation",
                              "blend with each pixel's gray level, factor as brightness",
                              make_random_saturation);
  registry.register_batch_operation(
      "image_mixup", "mix each uint8 image with the previous one of its batch, Beta(alpha, alpha)",
      make_image_mixup);
  registry.register_batch_operation(
      "label_mixup", "int64 label -> float32 (label, previous label, lambda), as image_mixup",
      make_label_mixup);
  registry.register_batch_operation(
      "mixup_to_one_hot", "label_mixup rows -> float32 [num_classes] mixed one-hot targets",
      make_mixup_to_one_hot);
  registry.register_operation(
      "poison", "blend `mask` into the images of `indices` with weight `alpha`, clamped",
      make_poison);
  registry.register_operation("squeeze", "drop size-1 dimensions (all, or `dims`)", make_squeeze);
  registry.register_operation("replace_label", "set the int64 label to `label` for `indices`",
                              make_replace_label);
}

}  // namespace ffcv
