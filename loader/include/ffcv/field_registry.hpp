// FieldRegistry: builds a Field from a descriptor read from a file.
//
// Built-in type ids (0 Float, 1 Int, 2 RGBImage, 3 Bytes, 4 NDArray, 5 JSON, 6 TorchTensor, read
// as NDArray) are registered at start-up. A library can register a factory for a new type id,
// and a reader can be given per-name factories for FFCV "custom fields" (type id 255), which
// store whatever argument blob their class writes and need their class to be read.
#pragma once

#include <functional>
#include <map>
#include <mutex>

#include "ffcv/field.hpp"

namespace ffcv {

inline constexpr std::uint8_t kCustomFieldTypeId = 255;

// Builds a field from its argument blob; throws std::runtime_error for a blob it rejects.
using FieldFactory = std::function<FieldPtr(const FieldArgs& args)>;

class FieldRegistry {
 public:
  // The process-wide registry, with the built-in fields registered.
  static FieldRegistry& global();

  // Registers (or replaces) the factory for `type_id`.
  void register_type(std::uint8_t type_id, FieldFactory factory);
  bool has_type(std::uint8_t type_id) const;

  // Builds the field of a descriptor. `custom` maps field names to factories, used first (as
  // FFCV's `custom_fields`). Throws std::runtime_error when no factory applies.
  FieldPtr make(const FieldDescriptor& descriptor,
                const std::map<std::string, FieldFactory>& custom = {}) const;

 private:
  FieldRegistry();
  mutable std::mutex mutex_;
  std::map<std::uint8_t, FieldFactory> factories_;
};

}  // namespace ffcv
