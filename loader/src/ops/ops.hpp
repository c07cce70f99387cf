// Internal: factories of the built-in operations, registered by builtin_steps.cpp.
#pragma once

#include <memory>

#include "ffcv/steps/op_params.hpp"
#include "ffcv/steps/operation.hpp"

namespace ffcv {

std::shared_ptr<Operation> make_random_horizontal_flip(const OpParams& params);
std::shared_ptr<Operation> make_normalize(const OpParams& params);
std::shared_ptr<Operation> make_convert(const OpParams& params);
std::shared_ptr<Operation> make_cutout(const OpParams& params);
std::shared_ptr<Operation> make_random_translate(const OpParams& params);
std::shared_ptr<Operation> make_random_brightness(const OpParams& params);
std::shared_ptr<Operation> make_random_contrast(const OpParams& params);
std::shared_ptr<Operation> make_random_saturation(const OpParams& params);
std::shared_ptr<Operation> make_replace_label(const OpParams& params);
std::shared_ptr<Operation> make_poison(const OpParams& params);
std::shared_ptr<Operation> make_squeeze(const OpParams& params);
std::shared_ptr<Operation> make_unpack_bits(const OpParams& params);
std::shared_ptr<BatchOperation> make_image_mixup(const OpParams& params);
std::shared_ptr<BatchOperation> make_label_mixup(const OpParams& params);
std::shared_ptr<BatchOperation> make_mixup_to_one_hot(const OpParams& params);
std::shared_ptr<Decoder> make_random_resized_crop(const OpParams& params);
std::shared_ptr<Decoder> make_center_crop(const OpParams& params);
std::shared_ptr<Decoder> make_random_resized_crops(const OpParams& params);
std::shared_ptr<Decoder> make_random_resized_crop_encoded(const OpParams& params);
std::shared_ptr<Decoder> make_center_crop_encoded(const OpParams& params);

}  // namespace ffcv
