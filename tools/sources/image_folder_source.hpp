// An image-folder dataset: one subfolder per class, images inside (torchvision's ImageFolder).
//
// Classes are the subfolder names in sorted order (label = position); files are taken in
// sorted order within each class. Hidden files and folders (hidden_path) are passed over, as an
// archive's hidden members are; files without an image
// extension (.gif, .txt, ...) are left out and listed in ignored_files(), and a class folder
// without images keeps its label (so labels do not depend on which folders are empty) and is
// listed in empty_classes(), for the writer to report. Samples are (image: RGBImage, label: Int).
#pragma once

#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"
#include "image_file.hpp"

namespace ffcv::tools {

class ImageFolderSource final : public SampleSource {
 public:
  // Scans `root`. Throws ConfigError when it has no class folders or no images.
  explicit ImageFolderSource(const std::string& root);

  std::uint64_t size() const override { return files_.size(); }
  std::vector<FieldValue> load(std::uint64_t index) const override;
  std::string describe(std::uint64_t index) const override { return files_[index]; }
  void prefetch(std::uint64_t index) const override { start_reading(files_[index]); }

  const std::vector<std::string>& class_names() const { return classes_; }
  const std::vector<std::string>& files() const { return files_; }
  std::int64_t label(std::uint64_t index) const { return labels_[index]; }
  const std::vector<std::string>& ignored_files() const { return ignored_; }
  const std::vector<std::string>& empty_classes() const { return empty_classes_; }

 private:
  std::vector<std::string> ignored_;
  std::vector<std::string> empty_classes_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<std::int64_t> labels_;
};

}  // namespace ffcv::tools
