#include "image_folder_source.hpp"

#include <algorithm>
#include <filesystem>

#include "ffcv/util/errors.hpp"
#include "image_file.hpp"

namespace ffcv::tools {
ImageFolderSource::ImageFolderSource(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(root, error)) {
    throw ConfigError("image folder '" + root + "' is not a directory");
  }
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && !hidden_path(name)) classes_.push_back(name);
  }
  std::sort(classes_.begin(), classes_.end());
  if (classes_.empty()) {
    throw ConfigError("image folder '" + root + "' has no class subfolders (expected " + root +
                      "/<class>/<image>)");
  }
  for (std::size_t label = 0; label < classes_.size(); ++label) {
    std::vector<std::string> class_files;
    for (auto entry = fs::recursive_directory_iterator(fs::path(root) / classes_[label]);
         entry != fs::recursive_directory_iterator(); ++entry) {
      if (hidden_path(entry->path().filename().string())) {
        if (entry->is_directory()) entry.disable_recursion_pending();
        continue;
      }
      if (entry->is_directory()) continue;
      if (!entry->is_regular_file()) {  // a FIFO, a device, a socket, a dangling link
        ignored_.push_back(entry->path().string() + " (not a regular file)");
        continue;
      }
      if (has_image_extension(entry->path())) {
        class_files.push_back(entry->path().string());
      } else {
        ignored_.push_back(entry->path().string());
      }
    }
    std::sort(class_files.begin(), class_files.end());
    if (class_files.empty()) empty_classes_.push_back(classes_[label]);
    for (std::string& file : class_files) {
      files_.push_back(std::move(file));
      labels_.push_back(static_cast<std::int64_t>(label));
    }
  }
  std::sort(ignored_.begin(), ignored_.end());
  if (files_.empty()) throw ConfigError("image folder '" + root + "' holds no image files");
}

std::vector<FieldValue> ImageFolderSource::load(std::uint64_t index) const {
  return {read_image_value(files_[index]), labels_[index]};
}

}  // namespace ffcv::tools
