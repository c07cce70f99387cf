// PlaneMap: where a step moves an image's pixels, so that boxes paired with the image follow it
// exactly (a ragged output's `follows`, decoders.hpp).
//
// A step that moves pixels (a crop and its resize, a flip, a translate) maps a point (x, y) of
// its input, in pixels with the image's top-left corner at (0, 0) and x to the right, to
//   (scale_x * x + shift_x, scale_y * y + shift_y)
// on its output canvas of `width` x `height` pixels; what falls outside the canvas is gone, so
// boxes are clipped to it after each step, as torchvision's transforms.v2 clamps boxes after a
// crop. A negative scale mirrors. Steps that leave pixels in place (colour, normalisation,
// erasing) add no map.
#pragma once

#include <array>
#include <cstddef>

namespace ffcv {

struct PlaneMap {
  double scale_x = 1, shift_x = 0, scale_y = 1, shift_y = 0;
  double width = 0, height = 0;  // the canvas after the step

  // Every point stays where it is, on a canvas of width x height.
  static PlaneMap identity(double width, double height) { return {1, 0, 1, 0, width, height}; }
  // Left-right mirrored: x -> width - x.
  static PlaneMap mirror(double width, double height) { return {-1, width, 1, 0, width, height}; }
};

// The maps of one sample through one pipeline, in order.
class PlaneMaps {
 public:
  static constexpr std::size_t kMaxMaps = 8;

  // Adds a step's map. Throws ConfigError past kMaxMaps.
  void push(const PlaneMap& map);
  void clear() { size_ = 0; }
  std::size_t size() const { return size_; }
  const PlaneMap& operator[](std::size_t i) const { return maps_[i]; }
  const PlaneMap* begin() const { return maps_.data(); }
  const PlaneMap* end() const { return maps_.data() + size_; }
  // The canvas after the last map (width, height); throws ConfigError when there is none.
  const PlaneMap& last() const;

 private:
  std::array<PlaneMap, kMaxMaps> maps_{};
  std::size_t size_ = 0;
};

// How a pipeline step treats pixel positions (Operation::pixel_geometry).
enum class PixelGeometry {
  kUnknown,  // the step does not say (e.g. a user's step): boxes cannot follow through it
  kKeeps,    // every pixel stays where it is (colour, normalisation, erasing, type changes)
  kMoves,    // map_geometry() says where pixels go
};

}  // namespace ffcv
