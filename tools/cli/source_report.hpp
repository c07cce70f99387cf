// What `ffcv write` tells about its sources, beside the .beton.
//
// For `folder` (and imagenet-like): the class -> label map, what became of the source JPEGs
// (kept as they came or encoded again, and why), the files that were left out (no image
// extension), the class folders without images, and the images skipped as undecodable
// (--on-bad-image skip) are printed as a short summary and stored in full in a sidecar
// "OUT.beton.sources.json", written atomically after the .beton: a .beton has no place for them
// that Python FFCV would still read.
//
// For `tar`: the archives, where the labels come from (class folders, .cls members or a labels
// file), the class map, the members left out (no image extension) and the images skipped, in the
// same sidecar.
//
// For `coco`: the images folder, the annotation file, the box format, the counts of entries and
// boxes, and the images skipped, in the same sidecar.
//
// For `npy --pack-bits`: the number of booleans per sample, which the packed bytes cannot tell
// (the last byte's padding bits look like features), in the same sidecar.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"
#include "sources/archive_source.hpp"
#include "sources/coco_source.hpp"
#include "sources/image_folder_source.hpp"

namespace ffcv::tools {

struct SkippedSource {
  std::string file;
  std::string reason;
};

// The sidecar's path for the output `output`.
std::string sources_sidecar_path(const std::string& output);

// The sidecar's JSON: {"root", "classes": [names, label = position], "empty_classes",
// "ignored_files", "file_bytes": the size of the .beton it describes, "images": what became of
// the source JPEGs (write_report.hpp's encode_tally_json), "skipped": [{"file", "reason"}]}.
std::string image_folder_sources_json(const std::string& root, const ImageFolderSource& source,
                                      const std::vector<SkippedSource>& skipped,
                                      const WriteSummary& summary);

// The archive sidecar's JSON: {"archives", "labels": "class folders" | "cls" | the labels file,
// "classes", "ignored_members", "file_bytes", "images", "skipped": [{"file", "reason"}]}.
std::string archive_sources_json(const std::vector<std::string>& archives,
                                 const ArchiveSource& source,
                                 const std::vector<SkippedSource>& skipped,
                                 const WriteSummary& summary);

// The npy sidecar's JSON: {"features", "targets", "packed_bits": booleans per sample}.
// The sidecar of `coco`: {"images_dir", "annotations", "box_format", "entries", "boxes",
// "file_bytes", "images", "skipped"}; and its summary lines.
std::string coco_sources_json(const std::string& images_dir, const std::string& annotations,
                              const CocoSource& source, const std::vector<SkippedSource>& skipped,
                              const WriteSummary& summary);
std::string coco_notes(const CocoSource& source, const std::vector<SkippedSource>& skipped,
                       const std::string& sidecar);

std::string packed_npy_sources_json(const std::string& features, const std::string& targets,
                                    std::uint64_t packed_bits);

// The summary lines for stderr (class map, skipped, ignored, empty classes), each at most a few
// examples long, and where the full lists are.
std::string image_folder_notes(const ImageFolderSource& source,
                               const std::vector<SkippedSource>& skipped,
                               const std::string& sidecar);

// The same summary for an archive source.
std::string archive_notes(const ArchiveSource& source, const std::vector<SkippedSource>& skipped,
                          const std::string& sidecar);

}  // namespace ffcv::tools
