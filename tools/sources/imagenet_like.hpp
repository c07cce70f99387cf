// A generator of an ImageNet-like JPEG folder tree made from real photographs, for benchmarks.
//
// ImageNet itself cannot be downloaded here, and decode and resize costs depend on what the JPEGs
// hold (photographic detail, size, quality, chroma subsampling), so synthetic noise or flat
// images would give misleading figures. Debian's wallpaper packages ship a few dozen real
// photographs; this turns them into thousands of distinct ImageNet-sized JPEGs by seeded random
// crops, INTER_AREA rescales, flips and re-encodes:
//   - size: short side log-normal with median 335 px (3/4 of them 300-500, clipped to
//     [200, 800]), long/short ratio 4:3, 3:2, 1:1 or in-between, 20% of the non-square ones
//     portrait, long side at most 1000 px; mean about 410x360 px;
//   - encoding: baseline 4:2:0 at quality ~N(90, 4) clipped to [75, 95] for most; 3% 4:4:4, 1%
//     progressive, 1% grayscale, as ImageNet mixes them.
// Files average about 33 KB (1.8 bits per pixel) from the default photos: wallpapers are smoother
// (sky, bokeh) than ImageNet's photos, whose files average about 110 KB, so decoding these is
// somewhat cheaper per image than decoding ImageNet.
// The tree is <output_dir>/cNNN/NNNNNNNN.jpg (class folders c000.., the image index zero-padded
// to 8 digits), the layout an image-folder source reads. Image i is a pure function of (seed, i)
// and the sorted photo list, so the bytes do not depend on the number of workers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ffcv::tools {

// The bounds of ImagenetLikeOptions::count (ten million JPEGs are about 330 GB, eight times
// ImageNet's training set) and num_classes.
inline constexpr std::uint64_t kMaxImagenetLikeCount = 10'000'000;
inline constexpr int kMaxImagenetLikeClasses = 1000;

// The file that marks a folder as made by generate_imagenet_like (JSON: count, classes, seed).
inline constexpr const char* kImagenetLikeMarker = ".imagenet-like.json";

struct ImagenetLikeOptions {
  std::string output_dir;  // JPEG tree root: <output_dir>/<class>/<index>.jpg
  std::uint64_t count = 5000;
  int num_classes = 100;  // 1..1000, named c000..c099; class of image i = a seeded function
  std::uint64_t seed = 0;
  int num_workers = 0;                  // 0: all cores
  std::vector<std::string> photo_dirs;  // default (empty): default_photo_dirs()
  // output_dir is replaced as a whole. A folder that exists already is replaced only when it is
  // empty or was made by this generator (it holds kImagenetLikeMarker), unless this is set.
  bool replace_any_folder = false;
  // Called from the calling thread about 10 times a second, and once at the end with done ==
  // total.
  std::function<void(std::uint64_t done, std::uint64_t total)> on_progress;
};

struct ImagenetLikeSummary {
  std::uint64_t count = 0;        // JPEGs written
  std::uint64_t total_bytes = 0;  // their total size
  double mean_width = 0;
  double mean_height = 0;
  int photos_used = 0;  // distinct source photographs at least one image was cut from
};

// Finds the source photos (see find_source_photos) and writes `count` JPEGs under
// options.output_dir, creating it and every class folder (also those that get no image, so that
// class names map to the same labels whatever the count). The tree is built beside output_dir
// under a temporary name and renamed into place when complete (staged_directory.hpp), so a
// killed run leaves the previous tree or none, never a partial one. Throws ConfigError for bad
// options or when no photo is found (naming the searched folders and the Debian packages to
// install), EncodeError when a photo cannot be decoded and IoError when a file cannot be written.
// While it runs, OpenCV's own threading is switched off (cv::setNumThreads) and then restored.
ImagenetLikeSummary generate_imagenet_like(const ImagenetLikeOptions& options);

// The folders searched when ImagenetLikeOptions::photo_dirs is empty: /usr/share/wallpapers
// (plasma-workspace-wallpapers) and /usr/share/backgrounds (lomiri-wallpapers-16.04,
// mate-backgrounds).
std::vector<std::string> default_photo_dirs();

// The Debian packages that provide the default photos, for error messages.
const char* photo_packages_hint();

// The source photographs under `dirs` (searched recursively; missing folders are skipped), as a
// sorted list of canonical paths without duplicates. Taken: files (or links to files) named
// *.jpg or *.jpeg. Skipped: `screenshot.*` previews, `images_dark` folders (dark variants of a
// wallpaper), all but the largest of files named <W>x<H>.jpg in one folder (one wallpaper in
// several resolutions), and, under /usr/share, the wallpapers of those packages that are
// renders or digital art rather than photographs. PNGs are never taken: in these packages most
// are digital art.
std::vector<std::string> find_source_photos(const std::vector<std::string>& dirs);

}  // namespace ffcv::tools
