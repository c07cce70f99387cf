#include "source_report.hpp"

#include "ffcv/util/json_text.hpp"

namespace ffcv::tools {
namespace {

constexpr std::size_t kExamples = 5;

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_quote(items[i]);
  return out + "]";
}

}  // namespace

std::string sources_sidecar_path(const std::string& output) { return output + ".sources.json"; }

std::string image_folder_sources_json(const std::string& root, const ImageFolderSource& source,
                                      const std::vector<SkippedSource>& skipped) {
  std::string out =
      "{\"root\": " + json_quote(root) + ",\n \"classes\": " + json_list(source.class_names()) +
      ",\n \"empty_classes\": " + json_list(source.empty_classes()) +
      ",\n \"ignored_files\": " + json_list(source.ignored_files()) + ",\n \"skipped\": [";
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    out += std::string(i ? ",\n  " : "\n  ") + "{\"file\": " + json_quote(skipped[i].file) +
           ", \"reason\": " + json_quote(skipped[i].reason) + "}";
  }
  return out + "]}\n";
}

std::string packed_npy_sources_json(const std::string& features, const std::string& targets,
                                    std::uint64_t packed_bits) {
  return "{\"features\": " + json_quote(features) + ",\n \"targets\": " + json_quote(targets) +
         ",\n \"packed_bits\": " + std::to_string(packed_bits) + "}\n";
}

std::string image_folder_notes(const ImageFolderSource& source,
                               const std::vector<SkippedSource>& skipped,
                               const std::string& sidecar) {
  const auto& classes = source.class_names();
  std::string out = "labels: ";
  for (std::size_t c = 0; c < classes.size() && c < kExamples * 2; ++c) {
    out += (c ? ", " : "") + std::to_string(c) + " = " + classes[c];
  }
  if (classes.size() > kExamples * 2) {
    out += ", ... " + std::to_string(classes.size() - 1) + " = " + classes.back();
  }
  out += " (" + std::to_string(classes.size()) + " classes)\n";
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
  for (std::size_t i = 0; i < skipped.size() && i < kExamples; ++i) {
    out += "skipped " + skipped[i].file + ": " + skipped[i].reason + "\n";
  }
  if (skipped.size() > kExamples) {
    out += "... " + std::to_string(skipped.size() - kExamples) + " more skipped\n";
  }
  out += "class map and the lists in full: " + sidecar + "\n";
  return out;
}

}  // namespace ffcv::tools
