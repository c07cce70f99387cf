#include "coco_source.hpp"

#include <algorithm>
#include <filesystem>

#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/image/jpeg_coding.hpp"
#include "ffcv/util/errors.hpp"
#include "image_file.hpp"

namespace ffcv::tools {
namespace {

// The pixel size of a source image's value: a JPEG still encoded, or decoded pixels.
std::pair<int, int> frame_size(const FieldValue& value) {
  if (const auto* jpeg = std::get_if<JpegFile>(&value)) {
    const JpegCoding coding = read_jpeg_coding(jpeg->bytes);
    return {coding.width, coding.height};
  }
  const RgbImage& image = std::get<RgbImage>(value);
  return {image.width, image.height};
}

template <typename T>
NdArray rows(const char* dtype, std::vector<std::uint64_t> shape, const T* data) {
  std::uint64_t bytes = sizeof(T);
  for (const std::uint64_t extent : shape) bytes *= extent;
  const auto* first = reinterpret_cast<const std::uint8_t*>(data);
  return {DType::parse(dtype), std::move(shape), std::vector<std::uint8_t>(first, first + bytes)};
}

}  // namespace

BoxFormat parse_box_format(const std::string& text) {
  if (text == "xyxy") return BoxFormat::kXyxy;
  if (text == "xywh") return BoxFormat::kXywh;
  throw ConfigError("unknown box format '" + text + "' (xyxy, xywh)");
}

CocoSource::CocoSource(std::string images_dir, const std::string& annotations, BoxFormat format,
                       std::shared_ptr<const RgbImageField> image_field, bool polygons)
    : images_dir_(std::move(images_dir)),
      annotations_(read_coco_annotations(annotations, polygons)),
      format_(format),
      image_field_(std::move(image_field)),
      polygons_(polygons) {
  if (!std::filesystem::is_directory(images_dir_)) {
    throw ConfigError("COCO images folder '" + images_dir_ + "' is not a folder");
  }
  // Every file is inside the folder: an annotation file names no other file on the machine.
  for (const CocoImage& image : annotations_.images) {
    const std::filesystem::path name(image.file_name);
    const bool climbs = std::any_of(name.begin(), name.end(),
                                    [](const std::filesystem::path& part) { return part == ".."; });
    if (name.is_absolute() || climbs) {
      throw FormatError(annotations, "image " + std::to_string(image.id) + "'s file_name '" +
                                         image.file_name +
                                         "' leaves the images folder (absolute, or with '..')");
    }
  }
}

std::string CocoSource::describe(std::uint64_t index) const {
  return (std::filesystem::path(images_dir_) / annotations_.images[index].file_name).string();
}

std::vector<NamedField> CocoSource::fields() const {
  std::vector<NamedField> fields = {
      {"image", image_field_},
      {"boxes",
       std::make_shared<RaggedNdArrayField>(DType::parse("<f4"), std::vector<std::uint64_t>{4})},
      {"labels",
       std::make_shared<RaggedNdArrayField>(DType::parse("<i8"), std::vector<std::uint64_t>{})},
      {"crowd",
       std::make_shared<RaggedNdArrayField>(DType::parse("|u1"), std::vector<std::uint64_t>{})},
      {"image_id", std::make_shared<IntField>()}};
  if (polygons_) {
    const auto scalar_rows = [](const char* dtype) {
      return std::make_shared<RaggedNdArrayField>(DType::parse(dtype),
                                                  std::vector<std::uint64_t>{});
    };
    fields.push_back({"polygons", std::make_shared<RaggedNdArrayField>(
                                      DType::parse("<f4"), std::vector<std::uint64_t>{2})});
    fields.push_back({"polygon_sizes", scalar_rows("<i8")});
    fields.push_back({"polygon_boxes", scalar_rows("<i8")});
  }
  return fields;
}

void CocoSource::prefetch(std::uint64_t index) const { start_reading(describe(index)); }

std::vector<FieldValue> CocoSource::load(std::uint64_t index) const {
  const CocoImage& entry = annotations_.images[index];
  FieldValue image = read_image_value(describe(index));
  const auto [width, height] = frame_size(image);
  if (width != entry.width || height != entry.height) {
    throw EncodeError("the annotations give " + std::to_string(entry.width) + "x" +
                      std::to_string(entry.height) + " px, the file is " + std::to_string(width) +
                      "x" + std::to_string(height) + " (its boxes would not fit it)");
  }
  // Boxes in pixels of the image as stored: scaled as the image field will scale it.
  const auto [stored_width, stored_height] = image_field_->stored_size(width, height);
  const double sx = static_cast<double>(stored_width) / width;
  const double sy = static_cast<double>(stored_height) / height;
  std::vector<float> boxes;
  for (const std::array<float, 4>& box : entry.boxes) {
    const double x = box[0] * sx, y = box[1] * sy, w = box[2] * sx, h = box[3] * sy;
    const bool xyxy = format_ == BoxFormat::kXyxy;
    boxes.insert(boxes.end(),
                 {static_cast<float>(x), static_cast<float>(y),
                  static_cast<float>(xyxy ? x + w : w), static_cast<float>(xyxy ? y + h : h)});
  }
  const std::uint64_t n = entry.boxes.size();
  std::vector<FieldValue> values = {std::move(image), rows("<f4", {n, 4}, boxes.data()),
                                    rows("<i8", {n}, entry.categories.data()),
                                    rows("|u1", {n}, entry.crowd.data()), entry.id};
  if (polygons_) {
    std::vector<float> points(entry.polygon_points.size());
    for (std::size_t i = 0; i < points.size(); i += 2) {
      points[i] = static_cast<float>(entry.polygon_points[i] * sx);
      points[i + 1] = static_cast<float>(entry.polygon_points[i + 1] * sy);
    }
    const std::uint64_t polygons = entry.polygon_sizes.size();
    values.push_back(rows("<f4", {points.size() / 2, 2}, points.data()));
    values.push_back(rows("<i8", {polygons}, entry.polygon_sizes.data()));
    values.push_back(rows("<i8", {polygons}, entry.polygon_boxes.data()));
  }
  return values;
}

}  // namespace ffcv::tools
