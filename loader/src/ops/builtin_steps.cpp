// The catalogue of built-in steps: each decoder, operation and batch operation with its summary,
// the one declaration of its parameters (ffcv/steps/step_schema.hpp) and its factory. The
// factories read their parameters without fallbacks: the registry fills in the defaults declared
// here. docs/catalogue.md's parameter tables are generated from these declarations
// (tests/unit/catalogue_doc_test.cpp).
#include "ffcv/steps/op_registry.hpp"
#include "field_decoders.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

using Kind = ParamKind;

// The output size and decoding parameters every crop decoder takes.
StepSchema crop_decoder_parameters() {
  return {
      {"size", Kind::kInteger, when_absent("give `size`, or `height` and `width`"),
       between(1, 65535), "output side"},
      {"height", Kind::kInteger, when_absent("same as `size`"), between(1, 65535), "output height"},
      {"width", Kind::kInteger, when_absent("same as `size`"), between(1, 65535), "output width"},
      {"interpolation", Kind::kText, defaults_to("area"), one_of({"area", "linear"}),
       "resize filter: FFCV's INTER_AREA, or bilinear"},
      {"dct_scaling", Kind::kBool, defaults_to(true), any(),
       "decode the JPEG window at the smallest DCT scale M/8 that still covers the output"},
      {"fast_dct", Kind::kBool, defaults_to(true), any(),
       "libjpeg's fast integer IDCT, as FFCV decodes; false: the accurate one"},
  };
}

// The output size and filter of the encoded crops (no DCT options: the GPU decodes whole frames).
StepSchema encoded_crop_parameters() {
  StepSchema schema = crop_decoder_parameters();
  schema.resize(4);  // size, height, width, interpolation
  return schema;
}

StepSchema::value_type flip_parameter() {
  return {"flip", Kind::kNumber, defaults_to(0.0), between(0, 1),
          "chance that the output is mirrored, drawn as random_horizontal_flip right after the "
          "crop would draw it"};
}

// torchvision's crop sampling.
StepSchema random_crop_parameters() {
  return {
      {"scale", Kind::kNumberPair, defaults_to({0.08, 1.0}), ordered(at_least(0)),
       "range of the window's area, as a fraction of the image's"},
      {"ratio", Kind::kNumberPair, defaults_to({3.0 / 4.0, 4.0 / 3.0}), ordered(above(0)),
       "range of the window's aspect ratio (width / height), sampled log-uniformly"},
  };
}

StepSchema joined(StepSchema first, const StepSchema& second) {
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

// The factor range and probability of the colour jitters.
StepSchema jitter_parameters() {
  return {
      {"magnitude", Kind::kNumber, required(), at_least(0),
       "the factor is drawn from U(max(0, 1 - magnitude), 1 + magnitude)"},
      {"probability", Kind::kNumber, defaults_to(0.5), between(0, 1),
       "chance that a sample is changed"},
  };
}

StepSchema mixup_parameters() {
  return {
      {"alpha", Kind::kNumber, defaults_to(0.2), above(0), "the weights are Beta(alpha, alpha)"},
      {"same_lambda", Kind::kBool, defaults_to(false), any(),
       "one weight for the whole batch instead of one per sample"},
      {"group", Kind::kInteger, defaults_to(0), between(0, 65535),
       "batch operations of one group draw the same weights"},
  };
}

StepSchema fill_parameter(std::string meaning) {
  return {{"fill", Kind::kNumbers, when_absent("0 per channel"), any(), std::move(meaning)}};
}

void register_decoders(OpRegistry& registry) {
  registry.register_decoder("int", "Int field -> int64 [1]", {},
                            [](const OpParams&) { return std::make_shared<IntDecoder>(); });
  registry.register_decoder("float", "Float field -> float64 [1]", {},
                            [](const OpParams&) { return std::make_shared<FloatDecoder>(); });
  registry.register_decoder("ndarray", "NDArray field -> its dtype and shape", {},
                            [](const OpParams&) { return std::make_shared<NdArrayDecoder>(); });
  registry.register_decoder(
      "ragged",
      "RaggedNDArray field -> its rows: packed (values [rows in all, ...] + offsets [B + 1]) or "
      "padded (values [B, rows of the largest sample, ...] + lengths [B])",
      {{"layout", Kind::kText, defaults_to("packed"), one_of({"packed", "padded"}),
        "packed: torch's jagged layout; padded: zero rows up to the batch's largest sample"},
       {"follows", Kind::kText, defaults_to(""), any(),
        "another output of the sample that the rows follow: an image output (boxes move, are "
        "clipped and dropped with it) or a boxes output (the rows its boxes dropped are dropped)"},
       {"rows", Kind::kText, defaults_to("values"), one_of({"values", "boxes_xyxy", "boxes_xywh"}),
        "what the rows are: values, or float32 boxes [x1, y1, x2, y2] / [x, y, w, h] in pixels"},
       {"min_size", Kind::kNumber, defaults_to(1.0), at_least(0),
        "boxes: a moved box narrower or lower than this many output pixels is dropped"},
       {"min_area", Kind::kNumber, defaults_to(1.0), at_least(0),
        "boxes: a moved box of less area than this (output pixels) is dropped"}},
      [](const OpParams& params) {
        RaggedDecoderOptions options;
        options.layout =
            params.require_string("layout") == ragged_layout_name(RaggedLayout::kPadded)
                ? RaggedLayout::kPadded
                : RaggedLayout::kPacked;
        options.follows = params.require_string("follows");
        options.rows = parse_row_kind(params.require_string("rows"));
        options.limits = {params.require_double("min_size"), params.require_double("min_area")};
        return std::make_shared<RaggedDecoder>(options);
      });
  registry.register_decoder(
      "bytes", "Bytes/JSON field -> uint8 [max size + 8]: zero-padded payload, then its u64 length",
      {}, [](const OpParams&) { return std::make_shared<BytesDecoder>(); });
  registry.register_decoder("image", "RGBImage field of one image size -> uint8 [H, W, 3]", {},
                            [](const OpParams&) { return std::make_shared<SimpleImageDecoder>(); });
  registry.register_decoder(
      "random_resized_crop",
      "RGBImage -> uint8 [size, size, 3]: torchvision's random crop (`scale`, `ratio`), window "
      "decode at reduced DCT scale, `interpolation` area|linear",
      joined(crop_decoder_parameters(), random_crop_parameters()), make_random_resized_crop);
  registry.register_decoder(
      "random_resized_crops",
      "RGBImage -> uint8 [views, size, size, 3]: several random-resized crops of one decode",
      joined(joined(crop_decoder_parameters(), random_crop_parameters()),
             {{"views", Kind::kInteger, defaults_to(2), between(1, 64), "crops per image"},
              {"flip", Kind::kBool, defaults_to(false), any(),
               "mirror each view with probability 0.5"}}),
      make_random_resized_crops);
  registry.register_decoder(
      "center_crop",
      "RGBImage -> uint8 [size, size, 3]: centred square of `ratio` x the short side, resized",
      joined(crop_decoder_parameters(),
             {{"ratio", Kind::kNumber, defaults_to(224.0 / 256.0), between(0, 1, true, false),
               "side of the square, as a fraction of the image's short side"}}),
      make_center_crop);
  // The CPU halves of the GPU image path (ffcv/image/encoded_crop.hpp): the device step
  // decode_crops finishes them.
  registry.register_decoder(
      "random_resized_crop_encoded",
      "RGBImage -> uint8 [record bytes]: random_resized_crop's window and a flip, chosen here, "
      "the JPEG's bytes kept for decode_crops on the GPU (raw images resized here)",
      joined(joined(encoded_crop_parameters(), random_crop_parameters()), {flip_parameter()}),
      make_random_resized_crop_encoded);
  registry.register_decoder(
      "center_crop_encoded",
      "RGBImage -> uint8 [record bytes]: center_crop's window, the JPEG's bytes kept for "
      "decode_crops on the GPU (raw images resized here)",
      joined(encoded_crop_parameters(),
             {{"ratio", Kind::kNumber, defaults_to(224.0 / 256.0), between(0, 1, true, false),
               "side of the square, as a fraction of the image's short side"},
              flip_parameter()}),
      make_center_crop_encoded);
}

void register_operations(OpRegistry& registry) {
  registry.register_operation("random_horizontal_flip",
                              "mirror (H, W, C) left-right with `probability`",
                              {{"probability", Kind::kNumber, defaults_to(0.5), between(0, 1),
                                "chance that a sample is mirrored"}},
                              make_random_horizontal_flip);
  registry.register_operation(
      "normalize",
      "uint8 (..., C) -> `dtype` (float32|float16): (v - mean[c]) / std[c], 0-255 scale",
      {{"mean", Kind::kNumbers, required(), any(), "one per channel, on the 0-255 scale"},
       {"std", Kind::kNumbers, required(), above(0), "one per channel, on the 0-255 scale"},
       {"dtype", Kind::kText, defaults_to("float32"), any(), "float32 or float16"}},
      make_normalize);
  registry.register_operation(
      "convert", "cast every element to `dtype`",
      {{"dtype", Kind::kText, defaults_to("float32"), any(), "the numpy type to cast to"}},
      make_convert);
  registry.register_operation(
      "unpack_bits",
      "bit-packed uint8 (numpy.packbits) -> `count` values 0/1 in `dtype` (float32|float16|uint8)",
      {{"count", Kind::kInteger, required(), at_least(1), "booleans per sample"},
       {"dtype", Kind::kText, defaults_to("float32"), any(), "float32, float16 or uint8"}},
      make_unpack_bits);
  registry.register_operation(
      "cutout", "fill a `size` square inside the image with `fill`",
      joined({{"size", Kind::kInteger, required(), at_least(1), "side of the square"}},
             fill_parameter("colour of the square, one value per channel")),
      make_cutout);
  registry.register_operation(
      "random_translate", "shift by up to `padding` px each way, exposing `fill`",
      joined({{"padding", Kind::kInteger, required(), at_least(0), "largest shift, in pixels"}},
             fill_parameter("colour of the exposed pixels, one value per channel")),
      make_random_translate);
  registry.register_operation("random_brightness",
                              "scale pixels by U(1-magnitude, 1+magnitude) with `probability`",
                              jitter_parameters(), make_random_brightness);
  registry.register_operation("random_contrast",
                              "blend with the mean gray level, factor as brightness",
                              jitter_parameters(), make_random_contrast);
  registry.register_operation("random_saturation",
                              "blend with each pixel's gray level, factor as brightness",
                              jitter_parameters(), make_random_saturation);
  registry.register_operation(
      "poison", "blend `mask` into the images of `indices` with weight `alpha`, clamped",
      {{"mask", Kind::kNumbers, required(), any(), "the H·W·C values of the pattern, row-major"},
       {"alpha", Kind::kNumberOrNumbers, required(), between(0, 1),
        "weight of the mask: one for every pixel, or H·W, one per pixel"},
       {"indices", Kind::kNumbers, required(), any(), "dataset indices of the samples to poison"},
       {"clamp", Kind::kNumberPair, defaults_to({0.0, 255.0}), ordered(between(0, 255)),
        "the blend is clipped to [low, high]"}},
      make_poison);
  registry.register_operation("squeeze", "drop size-1 dimensions (all, or `dims`)",
                              {{"dims", Kind::kNumbers, when_absent("every size-1 dimension"),
                                any(), "the dimensions to drop, each of size 1"}},
                              make_squeeze);
  registry.register_operation(
      "replace_label", "set the int64 label to `label` for `indices`",
      {{"indices", Kind::kNumbers, required(), any(), "dataset indices of the samples to relabel"},
       {"label", Kind::kInteger, required(), any(), "their new label"}},
      make_replace_label);
}

void register_batch_operations(OpRegistry& registry) {
  registry.register_batch_operation(
      "image_mixup", "mix each uint8 image with the previous one of its batch, Beta(alpha, alpha)",
      mixup_parameters(), make_image_mixup);
  registry.register_batch_operation(
      "label_mixup", "int64 label -> float32 (label, previous label, lambda), as image_mixup",
      mixup_parameters(), make_label_mixup);
  registry.register_batch_operation(
      "mixup_to_one_hot", "label_mixup rows -> float32 [num_classes] mixed one-hot targets",
      {{"num_classes", Kind::kInteger, required(), at_least(1), "length of each target"}},
      make_mixup_to_one_hot);
}

}  // namespace

void register_builtin_steps(OpRegistry& registry) {
  register_decoders(registry);
  register_operations(registry);
  register_batch_operations(registry);
}

}  // namespace ffcv
