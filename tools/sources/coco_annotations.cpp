#include "coco_annotations.hpp"

#include "ffcv/util/errors.hpp"

#ifdef FFCV_HAVE_NLOHMANN_JSON
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#endif

namespace ffcv::tools {

#ifdef FFCV_HAVE_NLOHMANN_JSON
namespace {

using Json = nlohmann::json;

// One entry of "images" or "annotations" as it streams by: the fields this reader keeps.
struct Entry {
  std::optional<std::int64_t> id, image_id, category_id, iscrowd;
  std::optional<double> width, height;
  std::optional<std::string> file_name;
  std::vector<double> bbox;
  bool bbox_seen = false;
  std::vector<std::vector<double>> polygons;  // with polygons kept
  bool segmentation_is_list = false;          // polygons; an object is an RLE mask, passed over
};

// The SAX handler: depth 1 is the top object, 2 the "images" or "annotations" array, 3 one
// entry, 4 the entry's "bbox" or "segmentation" (or another value nested in it, passed over),
// 5 one polygon of the segmentation.
class CocoHandler final : public nlohmann::json_sax<Json> {
 public:
  CocoHandler(const std::string& path, bool polygons) : path_(path), polygons_(polygons) {}

  bool null() override { return true; }
  bool boolean(bool value) override { return number(value ? 1 : 0, value ? 1 : 0); }
  bool number_integer(number_integer_t value) override {
    return number(static_cast<double>(value), value);
  }
  bool number_unsigned(number_unsigned_t value) override {
    // Above int64's range a number is no id this reader can keep exactly.
    const bool fits = value <= static_cast<number_unsigned_t>(INT64_MAX);
    return number(
        static_cast<double>(value),
        fits ? std::optional<std::int64_t>(static_cast<std::int64_t>(value)) : std::nullopt);
  }
  bool number_float(number_float_t value, const string_t&) override {
    // 3.0 counts as the whole number 3; ids beyond 2^53 must be written as integers.
    const bool whole = value == std::floor(value) && std::abs(value) < 9.0e15;
    return number(value, whole ? std::optional<std::int64_t>(static_cast<std::int64_t>(value))
                               : std::nullopt);
  }
  bool string(string_t& value) override {
    if (depth_ == 3 && key_ == "file_name") entry_.file_name = value;
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 3 && section_ != Section::kOther) entry_ = Entry{};
    return true;
  }
  bool key(string_t& value) override {
    if (depth_ == 1) {
      section_ = value == "images"        ? Section::kImages
                 : value == "annotations" ? Section::kAnnotations
                                          : Section::kOther;
    }
    if (depth_ == 3) key_ = value;
    return true;
  }
  bool end_object() override {
    if (depth_ == 3 && section_ == Section::kImages) add_image();
    if (depth_ == 3 && section_ == Section::kAnnotations) add_annotation();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (depth_ == 4 && key_ == "bbox") entry_.bbox_seen = true;
    if (depth_ == 4 && key_ == "segmentation") entry_.segmentation_is_list = true;
    if (depth_ == 5 && keeps_polygon()) entry_.polygons.emplace_back();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) override {
    throw FormatError(path_, std::string("not valid JSON: ") + error.what(), position);
  }

  CocoAnnotations finish() {
    if (images_.empty()) fail("it lists no \"images\"");
    CocoAnnotations out;
    std::unordered_map<std::int64_t, std::size_t> image_of;
    for (std::size_t i = 0; i < images_.size(); ++i) {
      if (!image_of.emplace(images_[i].id, i).second) {
        fail("two images have id " + std::to_string(images_[i].id));
      }
    }
    for (const auto& [position, image_id, box, category, crowd, polygons] : annotations_) {
      const auto found = image_of.find(image_id);
      if (found == image_of.end()) {
        fail("annotation " + std::to_string(position) + " names image_id " +
             std::to_string(image_id) + ", which no entry of \"images\" has");
      }
      CocoImage& image = images_[found->second];
      for (const std::vector<double>& polygon : polygons) {
        for (const double value : polygon)
          image.polygon_points.push_back(static_cast<float>(value));
        image.polygon_sizes.push_back(static_cast<std::int64_t>(polygon.size() / 2));
        image.polygon_boxes.push_back(static_cast<std::int64_t>(image.boxes.size()));
      }
      image.boxes.push_back(box);
      image.categories.push_back(category);
      image.crowd.push_back(crowd);
      ++out.boxes;
    }
    out.images = std::move(images_);
    return out;
  }

 private:
  enum class Section { kOther, kImages, kAnnotations };
  struct Annotation {
    std::uint64_t position;
    std::int64_t image_id;
    std::array<float, 4> box;
    std::int64_t category;
    std::uint8_t crowd;
    std::vector<std::vector<double>> polygons;
  };

  [[noreturn]] void fail(const std::string& what) const { throw FormatError(path_, what); }

  // Whether the value being read belongs to an annotation's polygons, and they are kept.
  bool keeps_polygon() const {
    return polygons_ && section_ == Section::kAnnotations && key_ == "segmentation" &&
           entry_.segmentation_is_list;
  }

  // A number of the entry being read: `whole` is its exact integer value, when it has one.
  bool number(double value, std::optional<std::int64_t> whole) {
    if (depth_ == 4 && key_ == "bbox") {
      entry_.bbox.push_back(value);
      return true;
    }
    if (depth_ == 5 && keeps_polygon()) {
      entry_.polygons.back().push_back(value);
      return true;
    }
    if (depth_ == 4 && keeps_polygon()) {
      fail("annotation " + std::to_string(annotations_.size()) +
           " has a \"segmentation\" of loose numbers; polygons are lists [x1, y1, x2, y2, ...]");
    }
    if (depth_ != 3) return true;
    if (key_ == "id") entry_.id = whole;
    if (key_ == "image_id") entry_.image_id = whole;
    if (key_ == "category_id") entry_.category_id = whole;
    if (key_ == "iscrowd") entry_.iscrowd = whole;
    if (key_ == "width") entry_.width = value;
    if (key_ == "height") entry_.height = value;
    return true;
  }

  void add_image() {
    const std::string which = "image " + std::to_string(images_.size()) + " of \"images\"";
    if (!entry_.id) fail(which + " has no whole-number \"id\"");
    if (!entry_.file_name || entry_.file_name->empty()) fail(which + " has no \"file_name\"");
    const auto side = [&](const std::optional<double>& value, const char* name) {
      if (!value || *value != std::floor(*value) || *value < 1 || *value > 65535) {
        fail(which + " (" + *entry_.file_name + ") has no \"" + name + "\" within 1..65535");
      }
      return static_cast<int>(*value);
    };
    CocoImage image;
    image.id = *entry_.id;
    image.file_name = *entry_.file_name;
    image.width = side(entry_.width, "width");
    image.height = side(entry_.height, "height");
    images_.push_back(std::move(image));
  }

  void add_annotation() {
    const std::uint64_t position = annotations_.size();
    const std::string which = "annotation " + std::to_string(position) +
                              (entry_.id ? " (id " + std::to_string(*entry_.id) + ")" : "");
    if (!entry_.image_id) fail(which + " has no whole-number \"image_id\"");
    if (!entry_.category_id) fail(which + " has no whole-number \"category_id\"");
    if (!entry_.bbox_seen || entry_.bbox.size() != 4) {
      fail(which + " has no \"bbox\" of four numbers [x, y, width, height]");
    }
    for (const double value : entry_.bbox) {
      if (!std::isfinite(value) || std::abs(value) > 1e9) {
        fail(which + " has a \"bbox\" value that is not a finite number of pixels");
      }
    }
    if (entry_.bbox[2] < 0 || entry_.bbox[3] < 0) {
      fail(which + " has a \"bbox\" of negative width or height");
    }
    const std::int64_t crowd = entry_.iscrowd.value_or(0);
    if (crowd != 0 && crowd != 1) fail(which + " has an \"iscrowd\" other than 0 or 1");
    for (const std::vector<double>& polygon : entry_.polygons) {
      if (polygon.size() < 6 || polygon.size() % 2 != 0) {
        fail(which + " has a polygon of " + std::to_string(polygon.size()) +
             " numbers; a polygon is at least three points, x and y each");
      }
      for (const double value : polygon) {
        if (!std::isfinite(value) || std::abs(value) > 1e9) {
          fail(which + " has a polygon value that is not a finite number of pixels");
        }
      }
    }
    annotations_.push_back(
        {position,
         *entry_.image_id,
         {static_cast<float>(entry_.bbox[0]), static_cast<float>(entry_.bbox[1]),
          static_cast<float>(entry_.bbox[2]), static_cast<float>(entry_.bbox[3])},
         *entry_.category_id,
         static_cast<std::uint8_t>(crowd),
         std::move(entry_.polygons)});
  }

  const std::string& path_;
  bool polygons_;
  int depth_ = 0;
  Section section_ = Section::kOther;
  std::string key_;
  Entry entry_;
  std::vector<CocoImage> images_;
  std::vector<Annotation> annotations_;
};

}  // namespace

CocoAnnotations read_coco_annotations(const std::string& path, bool polygons) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "open", errno);
  CocoHandler handler(path, polygons);
  nlohmann::json::sax_parse(in, &handler);
  return handler.finish();
}

#else

CocoAnnotations read_coco_annotations(const std::string& path, bool) {
  throw ConfigError(path +
                    ": this build reads no COCO annotations: it was built without "
                    "nlohmann-json3-dev (tools/setup.sh installs it)");
}

#endif

}  // namespace ffcv::tools
