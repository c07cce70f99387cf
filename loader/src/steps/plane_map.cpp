#include "ffcv/steps/plane_map.hpp"

#include "ffcv/util/errors.hpp"

namespace ffcv {

void PlaneMaps::push(const PlaneMap& map) {
  if (size_ == kMaxMaps) {
    throw ConfigError("more than " + std::to_string(kMaxMaps) +
                      " pixel-moving steps in one pipeline; boxes follow at most that many");
  }
  maps_[size_++] = map;
}

const PlaneMap& PlaneMaps::last() const {
  if (size_ == 0) throw ConfigError("no pixel map: the image's decoder gave none");
  return maps_[size_ - 1];
}

}  // namespace ffcv
