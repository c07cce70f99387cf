#include "box_rows.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "ffcv/util/errors.hpp"

namespace ffcv {

RowKind parse_row_kind(const std::string& text) {
  if (text == "values") return RowKind::kValues;
  if (text == "boxes_xyxy") return RowKind::kBoxesXyxy;
  if (text == "boxes_xywh") return RowKind::kBoxesXywh;
  throw ConfigError("unknown rows '" + text + "' (values, boxes_xyxy, boxes_xywh)");
}

std::uint64_t move_boxes(float* boxes, std::uint64_t count, RowKind kind, const PlaneMaps& maps,
                         const BoxLimits& limits, std::uint8_t* kept) {
  std::uint64_t out = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const float* box = boxes + 4 * i;
    double x1 = box[0], y1 = box[1], x2 = box[2], y2 = box[3];
    if (kind == RowKind::kBoxesXywh) {
      x2 += x1;
      y2 += y1;
    }
    // A box with a value that is no number or infinite, or inverted (x2 < x1 or y2 < y1; a
    // negative width or height), is no box: dropped as SanitizeBoundingBoxes drops it, not
    // clipped or swapped into one.
    if (!std::isfinite(x1) || !std::isfinite(y1) || !std::isfinite(x2) || !std::isfinite(y2) ||
        x2 < x1 || y2 < y1) {
      kept[i] = 0;
      continue;
    }
    for (const PlaneMap& map : maps) {
      x1 = map.scale_x * x1 + map.shift_x;
      x2 = map.scale_x * x2 + map.shift_x;
      y1 = map.scale_y * y1 + map.shift_y;
      y2 = map.scale_y * y2 + map.shift_y;
      if (map.scale_x < 0) std::swap(x1, x2);  // mirrored
      if (map.scale_y < 0) std::swap(y1, y2);
      x1 = std::clamp(x1, 0.0, map.width);
      x2 = std::clamp(x2, 0.0, map.width);
      y1 = std::clamp(y1, 0.0, map.height);
      y2 = std::clamp(y2, 0.0, map.height);
    }
    const double width = x2 - x1, height = y2 - y1;
    kept[i] =
        width >= limits.min_size && height >= limits.min_size && width * height >= limits.min_area;
    if (!kept[i]) continue;
    float* target = boxes + 4 * out++;
    target[0] = static_cast<float>(x1);
    target[1] = static_cast<float>(y1);
    target[2] = static_cast<float>(kind == RowKind::kBoxesXywh ? width : x2);
    target[3] = static_cast<float>(kind == RowKind::kBoxesXywh ? height : y2);
  }
  return out;
}

}  // namespace ffcv
