#include "source_report.hpp"

#include "ffcv/util/json_text.hpp"
#include "write_report.hpp"

namespace ffcv::tools {
namespace {

constexpr std::size_t kExamples = 5;

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_quote(items[i]);
  return out + "]";
}

// "\"file_bytes\": N, \"images\": {...}, \"skipped\": [{\"file\", \"reason\"}, ...]]}" closing a
// sidecar object.
std::string images_and_skipped_tail(const WriteSummary& summary,
                                    const std::vector<SkippedSource>& skipped) {
  std::string out = ",\n \"file_bytes\": " + std::to_string(summary.file_size) +
                    ",\n \"images\": " + encode_tally_json(summary.tally) + ",\n \"skipped\": [";
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    out += std::string(i ? ",\n  " : "\n  ") + "{\"file\": " + json_quote(skipped[i].file) +
           ", \"reason\": " + json_quote(skipped[i].reason) + "}";
  }
  return out + "]}\n";
}

// "labels: 0 = a, 1 = b, ... (N classes)".
std::string class_map_line(const std::vector<std::string>& classes) {
  std::string out = "labels: ";
  for (std::size_t c = 0; c < classes.size() && c < kExamples * 2; ++c) {
    out += (c ? ", " : "") + std::to_string(c) + " = " + classes[c];
  }
  if (classes.size() > kExamples * 2) {
    out += ", ... " + std::to_string(classes.size() - 1) + " = " + classes.back();
  }
  return out + " (" + std::to_string(classes.size()) + " classes)\n";
}

// A few skipped samples, and how many more.
std::string skipped_lines(const std::vector<SkippedSource>& skipped) {
  std::string out;
  for (std::size_t i = 0; i < skipped.size() && i < kExamples; ++i) {
    out += "skipped " + skipped[i].file + ": " + skipped[i].reason + "\n";
  }
  if (skipped.size() > kExamples) {
    out += "... " + std::to_string(skipped.size() - kExamples) + " more skipped\n";
  }
  return out;
}

}  // namespace

std::string sources_sidecar_path(const std::string& output) { return output + ".sources.json"; }

std::string image_folder_sources_json(const std::string& root, const ImageFolderSource& source,
                                      const std::vector<SkippedSource>& skipped,
                                      const WriteSummary& summary) {
  std::string out = "{\"root\": " + json_quote(root) +
                    ",\n \"classes\": " + json_list(source.class_names()) +
                    ",\n \"empty_classes\": " + json_list(source.empty_classes()) +
                    ",\n \"ignored_files\": " + json_list(source.ignored_files());
  return out + images_and_skipped_tail(summary, skipped);
}

std::string archive_sources_json(const std::vector<std::string>& archives,
                                 const ArchiveSource& source,
                                 const std::vector<SkippedSource>& skipped,
                                 const WriteSummary& summary) {
  std::string out = "{\"archives\": " + json_list(archives) +
                    ",\n \"labels\": " + json_quote(source.labels_from()) +
                    ",\n \"classes\": " + json_list(source.class_names()) +
                    ",\n \"ignored_members\": " + json_list(source.ignored_members());
  return out + images_and_skipped_tail(summary, skipped);
}

std::string archive_notes(const ArchiveSource& source, const std::vector<SkippedSource>& skipped,
                          const std::string& sidecar) {
  std::string out = source.labels_from() == "cls" ? "labels: from the .cls members\n"
                                                  : class_map_line(source.class_names());
  if (!source.ignored_members().empty()) {
    out += "left out " + std::to_string(source.ignored_members().size()) +
           " members that are no image (another extension, or a link or device, in brackets), "
           "e.g. " +
           source.ignored_members().front() + "\n";
  }
  return out + skipped_lines(skipped) + "the lists in full: " + sidecar + "\n";
}

std::string coco_sources_json(const std::string& images_dir, const std::string& annotations,
                              const CocoSource& source, const std::vector<SkippedSource>& skipped,
                              const WriteSummary& summary) {
  std::string out = "{\"images_dir\": " + json_quote(images_dir) +
                    ",\n \"annotations\": " + json_quote(annotations) + ",\n \"box_format\": " +
                    json_quote(source.box_format() == BoxFormat::kXywh ? "xywh" : "xyxy") +
                    ",\n \"entries\": " + std::to_string(source.size()) +
                    ",\n \"boxes\": " + std::to_string(source.annotations().boxes);
  return out + images_and_skipped_tail(summary, skipped);
}

std::string coco_notes(const CocoSource& source, const std::vector<SkippedSource>& skipped,
                       const std::string& sidecar) {
  std::uint64_t without_boxes = 0;
  for (const CocoImage& image : source.annotations().images) without_boxes += image.boxes.empty();
  std::string out =
      "boxes: " + std::to_string(source.annotations().boxes) + " over " +
      std::to_string(source.size()) + " images (" + std::to_string(without_boxes) +
      " without any), " +
      (source.box_format() == BoxFormat::kXywh ? "[x, y, width, height]" : "[x1, y1, x2, y2]") +
      " in pixels of the stored images\n";
  return out + skipped_lines(skipped) + "the list in full: " + sidecar + "\n";
}

std::string packed_npy_sources_json(const std::string& features, const std::string& targets,
                                    std::uint64_t packed_bits) {
  return "{\"features\": " + json_quote(features) + ",\n \"targets\": " + json_quote(targets) +
         ",\n \"packed_bits\": " + std::to_string(packed_bits) + "}\n";
}

std::string image_folder_notes(const ImageFolderSource& source,
                               const std::vector<SkippedSource>& skipped,
                               const std::string& sidecar) {
  std::string out = class_map_line(source.class_names());
  if (!source.empty_classes().empty()) {
    out += "class folders without images (their labels have no samples): ";
    for (std::size_t i = 0; i < source.empty_classes().size() && i < kExamples; ++i) {
      out += (i ? ", " : "") + source.empty_classes()[i];
    }
    out += source.empty_classes().size() > kExamples ? ", ...\n" : "\n";
  }
  if (!source.ignored_files().empty()) {
    out += "left out " + std::to_string(source.ignored_files().size()) +
           " files without an image extension, e.g. " + source.ignored_files().front() + "\n";
  }
  out += skipped_lines(skipped);
  out += "class map and the lists in full: " + sidecar + "\n";
  return out;
}

}  // namespace ffcv::tools
