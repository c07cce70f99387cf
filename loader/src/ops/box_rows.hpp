// Internal: boxes that follow an image (the ragged decoder's `follows`), moved through the
// image's pixel maps, clipped and sifted as torchvision's transforms.v2 does.
#pragma once

#include <cstdint>
#include <string>

#include "ffcv/steps/plane_map.hpp"

namespace ffcv {

// What the rows of a ragged output are, for following an image.
enum class RowKind {
  kValues,     // values that do not move (labels, ids): kept or dropped with the followed boxes
  kBoxesXyxy,  // float32 [x1, y1, x2, y2] in pixels of the stored image
  kBoxesXywh,  // float32 [x, y, width, height] (COCO's), in pixels of the stored image
};
// "values" | "boxes_xyxy" | "boxes_xywh"; throws ConfigError naming the accepted ones.
RowKind parse_row_kind(const std::string& text);

// When a moved box is kept: its sides and area after the last clip (SanitizeBoundingBoxes').
struct BoxLimits {
  double min_size = 1;
  double min_area = 1;
};

// Moves `count` boxes through `maps` in place: after each map a box is clipped to that map's
// canvas (a mirroring map swaps its x or y ends). A box that is not finite or is inverted
// (x2 < x1, y2 < y1, or a negative width or height) is dropped before any map, and so is one
// left smaller than `limits` after them;
// the kept ones move first, in order, in the boxes' own format. kept[i] says whether box i was
// kept. Returns how many were.
std::uint64_t move_boxes(float* boxes, std::uint64_t count, RowKind kind, const PlaneMaps& maps,
                         const BoxLimits& limits, std::uint8_t* kept);

}  // namespace ffcv
