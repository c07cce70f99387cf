// A COCO-style detection dataset: a folder of images and its annotation file
// (coco_annotations.hpp). One sample per entry of "images", in the file's order:
//   image     RGBImage, the file (any format the sources read)
//   boxes     RaggedNDArray <f4 [4]: the image's boxes, [x1, y1, x2, y2] (or COCO's
//             [x, y, width, height] with BoxFormat::kXywh), in pixels of the image as stored, so
//             scaled with it when max_resolution shrinks it
//   labels    RaggedNDArray <i8: each box's category_id, as the file numbers them
//   crowd     RaggedNDArray |u1: each box's iscrowd (crowd regions, which detectors usually
//             leave out of training)
//   image_id  Int: the entry's id
// and, with polygons (each annotation's "segmentation" polygons, for instance masks):
//   polygons        RaggedNDArray <f4 [2]: every polygon's points, in pixels of the stored image
//   polygon_sizes   RaggedNDArray <i8: the points of each polygon, in order
//   polygon_boxes   RaggedNDArray <i8: the box (its row in `boxes`) each polygon outlines
// An image without annotations is a sample of no boxes. The annotation's width and height must
// be the file's: boxes are in its pixels, so a file that disagrees (e.g. rotated since) fails,
// and --on-bad-image decides.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coco_annotations.hpp"
#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/rgb_image_field.hpp"

namespace ffcv::tools {

enum class BoxFormat { kXyxy, kXywh };
// "xyxy" | "xywh"; throws ConfigError otherwise.
BoxFormat parse_box_format(const std::string& text);

class CocoSource final : public SampleSource {
 public:
  // Reads the annotations. Throws FormatError (coco_annotations.hpp), or ConfigError when
  // `images_dir` is not a folder.
  CocoSource(std::string images_dir, const std::string& annotations, BoxFormat format,
             std::shared_ptr<const RgbImageField> image_field, bool polygons = false);

  std::uint64_t size() const override { return annotations_.images.size(); }
  std::vector<FieldValue> load(std::uint64_t index) const override;
  std::string describe(std::uint64_t index) const override;
  void prefetch(std::uint64_t index) const override;
  // The fields of the samples, the image field given to the constructor first.
  std::vector<NamedField> fields() const;

  const CocoAnnotations& annotations() const { return annotations_; }
  BoxFormat box_format() const { return format_; }

 private:
  std::string images_dir_;
  CocoAnnotations annotations_;
  BoxFormat format_;
  std::shared_ptr<const RgbImageField> image_field_;
  bool polygons_;
};

}  // namespace ffcv::tools
