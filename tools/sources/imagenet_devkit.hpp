// ImageNet's ILSVRC2012 development kit (ILSVRC2012_devkit_t12.tar.gz) as the validation labels
// of `ffcv write tar ILSVRC2012_img_val.tar --labels ILSVRC2012_devkit_t12.tar.gz`.
//
// The kit's data/ILSVRC2012_validation_ground_truth.txt gives, on line i, the ILSVRC2012_ID (1 to
// 1,000) of image ILSVRC2012_val_{i, 8 digits}; data/meta.mat's `synsets` struct array gives
// each ID its WordNet id (WNID), among the synsets without children (the 1,000 classes), as
// torchvision's ImageNet reads the kit. The labels are then the WNIDs in sorted order: the same
// numbers as the training tar's class tars and as Kaggle's LOC_val_solution.csv.
#pragma once

#include <map>
#include <string>

namespace ffcv::tools {

// Image stem ("ILSVRC2012_val_00000001") -> WNID ("n01751748"). Throws ConfigError for a kit
// without either file, an ID that names no leaf synset, or a line that is not a number;
// FormatError for a meta.mat this reader does not take; IoError for a damaged archive.
std::map<std::string, std::string> read_imagenet_devkit(const std::string& archive);

}  // namespace ffcv::tools
