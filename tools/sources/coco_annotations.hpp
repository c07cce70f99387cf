// Reading a COCO-style annotation file (the "instances" JSON of COCO detection):
//   "images":      [{"id", "file_name", "width", "height"}, ...]
//   "annotations": [{"image_id", "bbox": [x, y, width, height], "category_id", "iscrowd",
//                    "segmentation": [[x1, y1, x2, y2, ...], ...]}, ...]
// Polygons ("segmentation" as lists of points) are kept only when asked; RLE masks (crowd
// regions' "segmentation" objects) and everything else ("categories", "area", "info", ...) are
// passed over. The file is read
// as it streams (a SAX parse), so memory grows with the boxes kept, not with the file: COCO's
// 450 MB training file, mostly polygons, needs no more than its boxes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ffcv::tools {

struct CocoImage {
  std::int64_t id = 0;
  std::string file_name;
  int width = 0, height = 0;
  std::vector<std::array<float, 4>> boxes;  // [x, y, width, height], in the file's order
  std::vector<std::int64_t> categories;     // one per box
  std::vector<std::uint8_t> crowd;          // one per box: iscrowd (0 when absent)
  // With polygons: every polygon's points (x, y pairs) back to back, the points of each
  // polygon, and the box (position in `boxes`) whose annotation holds it.
  std::vector<float> polygon_points;
  std::vector<std::int64_t> polygon_sizes;
  std::vector<std::int64_t> polygon_boxes;
};

struct CocoAnnotations {
  std::vector<CocoImage> images;  // in the file's order
  std::uint64_t boxes = 0;
};

// Reads `path`. Throws FormatError naming the file and, for JSON it cannot parse, the byte
// offset; for an image or annotation that lacks a field or holds a bad value (a negative box
// side, a size outside 1..65535), naming which one; for an annotation whose image_id names no
// image, or two images of one id.
// With `polygons`, also each annotation's polygons: lists of at least three points, finite.
CocoAnnotations read_coco_annotations(const std::string& path, bool polygons = false);

}  // namespace ffcv::tools
