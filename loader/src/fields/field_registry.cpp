#include "ffcv/field_registry.hpp"

#include <stdexcept>

#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"

namespace ffcv {

FieldRegistry::FieldRegistry() {
  factories_[FloatField::kTypeId] = [](const FieldArgs&) { return std::make_shared<FloatField>(); };
  factories_[IntField::kTypeId] = [](const FieldArgs&) { return std::make_shared<IntField>(); };
  factories_[RgbImageField::kTypeId] = [](const FieldArgs&) {
    return std::make_shared<RgbImageField>();
  };
  factories_[BytesField::kTypeId] = [](const FieldArgs&) { return std::make_shared<BytesField>(); };
  factories_[JsonField::kTypeId] = [](const FieldArgs&) { return std::make_shared<JsonField>(); };
  factories_[NdArrayField::kTypeId] = [](const FieldArgs& args) {
    return std::make_shared<NdArrayField>(NdArrayField::from_args(args));
  };
  factories_[NdArrayField::kTorchTensorTypeId] = [](const FieldArgs& args) {
    return std::make_shared<NdArrayField>(
        NdArrayField::from_args(args, NdArrayField::kTorchTensorTypeId));
  };
  // Custom fields: this project's own are known by their argument blob; others stay unknown.
  factories_[kCustomFieldTypeId] = [](const FieldArgs& args) -> FieldPtr {
    if (!RaggedNdArrayField::recognizes(args)) return nullptr;
    return std::make_shared<RaggedNdArrayField>(RaggedNdArrayField::from_args(args));
  };
}

FieldRegistry& FieldRegistry::global() {
  static FieldRegistry registry;
  return registry;
}

void FieldRegistry::register_type(std::uint8_t type_id, FieldFactory factory) {
  std::lock_guard lock(mutex_);
  factories_[type_id] = std::move(factory);
}

bool FieldRegistry::has_type(std::uint8_t type_id) const {
  std::lock_guard lock(mutex_);
  return factories_.count(type_id) != 0;
}

FieldPtr FieldRegistry::make(const FieldDescriptor& descriptor,
                             const std::map<std::string, FieldFactory>& custom) const {
  if (auto it = custom.find(descriptor.name); it != custom.end())
    return it->second(descriptor.args);
  FieldFactory factory;
  {
    std::lock_guard lock(mutex_);
    if (auto it = factories_.find(descriptor.type_id); it != factories_.end()) factory = it->second;
  }
  FieldPtr field = factory ? factory(descriptor.args) : nullptr;
  if (field) return field;
  if (descriptor.type_id == kCustomFieldTypeId) {
    throw std::runtime_error("field '" + descriptor.name +
                             "' is a custom field (type id 255) of a kind this build does not "
                             "know; reading it needs a custom field factory registered under "
                             "that name");
  }
  throw std::runtime_error("field '" + descriptor.name + "' has unknown type id " +
                           std::to_string(descriptor.type_id));
}

}  // namespace ffcv
