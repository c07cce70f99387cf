#include "ffcv/format/value.hpp"

namespace ffcv {

const char* value_kind_name(const FieldValue& value) {
  static constexpr const char* kNames[] = {"nothing", "int",   "float", "image",
                                           "ndarray", "bytes", "json",  "jpeg file"};
  return kNames[value.index()];
}

}  // namespace ffcv
