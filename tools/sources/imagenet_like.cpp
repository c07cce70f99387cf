#include "imagenet_like.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numbers>
#include <set>
#include <span>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "ffcv/format/value.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/counter_random.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/thread_group.hpp"
#include "ffcv/util/whole_file.hpp"
#include "staged_directory.hpp"

namespace ffcv::tools {
namespace {

namespace fs = std::filesystem;

// The counter-random stream of this generator ("INLK"), and the draw numbers within it. Image i's
// draws are uniform01(seed, kStream, i, draw).
constexpr std::uint32_t kStream = 0x494e4c4bu;
enum Draw : std::uint32_t {
  kDrawClass,
  kDrawPhoto,
  kDrawShortSide1,
  kDrawShortSide2,
  kDrawRatioKind,
  kDrawRatio,
  kDrawPortrait,
  kDrawCropSide,
  kDrawCropX,
  kDrawCropY,
  kDrawFlip,
  kDrawQuality1,
  kDrawQuality2,
  kDrawEncoding,
};

// Target size distribution (ImageNet train: mean about 400x350, most short sides 300-500).
constexpr double kShortSideMedian = 335.0;
constexpr double kShortSideSigma = 0.18;  // of the log
constexpr int kMinShortSide = 200;
constexpr int kMaxShortSide = 800;
constexpr int kMaxLongSide = 1000;
constexpr double kPortraitProbability = 0.2;

// Crops span at least this fraction of the sides of the largest crop of the target's aspect ratio
// (and never fewer pixels than the target), so that images cut from one photo differ in content
// without magnifying it.
constexpr double kMinCropSide = 0.3;

// Encoding mix and quality (ImageNet: mostly baseline 4:2:0 around quality 90).
constexpr double kGrayProbability = 0.01;
constexpr double kProgressiveProbability = 0.01;
constexpr double kFullChromaProbability = 0.03;
constexpr double kQualityMean = 90.0;
constexpr double kQualitySigma = 4.0;
constexpr int kMinQuality = 75;
constexpr int kMaxQuality = 95;

// Source photos are decoded with DCT scaling so that their long side is at most this, and all of
// them together take at most kCacheBudgetBytes (a smaller scale is picked when there are many).
// Each photo also keeps a pyramid of halvings down to a short side of about kMinPyramidSide, so
// that resizing a crop reads at most about 4x the target's pixels.
constexpr int kMaxSourceSide = 2048;
constexpr double kCacheBudgetBytes = 1.5e9;
constexpr int kMinPyramidSide = 128;

// Wallpapers of the Debian packages that are renders, paintings or digital art (checked by eye):
// plasma-workspace-wallpapers folders, and lomiri/mate file names without extension.
const std::set<std::string> kNonPhotoWallpaperFolders = {
    "Autumn", "Flow", "Honeywave", "PastelHills", "SafeLanding", "Shell", "Volna"};
const std::set<std::string> kNonPhotoBackgroundStems = {"analogpattern_by_Peter_Nerlich",
                                                        "free_by_Peter_Nerlich",
                                                        "greentock_by_Peter_Nerlich",
                                                        "umang_by_Abhishek_Mudgal",
                                                        "Elephants",
                                                        "Elephants_3840x2160",
                                                        "Elephants_5640x3172",
                                                        "GreenTraditional"};

enum class Encoding { kBaseline420, kBaseline444, kProgressive420, kGray };

// A decoded photo as a pyramid of packed RGB images: levels[0] is the decoded photo, each next
// level half the previous one's size (a 2x2 box average). Read-only once loaded, shared between
// threads.
struct SourcePhoto {
  std::vector<cv::Mat> levels;
  int width() const { return levels[0].cols; }
  int height() const { return levels[0].rows; }
};

// Everything drawn for one image besides its class and photo.
struct ImageLayout {
  int width = 0;
  int height = 0;
  cv::Rect crop;
  bool flip = false;
  int quality = 90;
  Encoding encoding = Encoding::kBaseline420;
};

double draw(std::uint64_t seed, std::uint64_t index, Draw which) {
  return uniform01(seed, kStream, index, which);
}

// A standard normal variate from two uniform draws (Box-Muller).
double draw_normal(std::uint64_t seed, std::uint64_t index, Draw first, Draw second) {
  const double radius = std::sqrt(-2.0 * std::log(1.0 - draw(seed, index, first)));
  return radius * std::cos(2.0 * std::numbers::pi * draw(seed, index, second));
}

int draw_class(std::uint64_t seed, std::uint64_t index, int num_classes) {
  return static_cast<int>(random_u64(seed, kStream, index, kDrawClass) %
                          static_cast<std::uint64_t>(num_classes));
}

int draw_photo(std::uint64_t seed, std::uint64_t index, std::size_t num_photos) {
  return static_cast<int>(random_u64(seed, kStream, index, kDrawPhoto) % num_photos);
}

// Long side / short side: 4:3 like most camera photos (45%), 3:2 (8%), square (22%), the rest
// log-uniform in [1, 1.6].
double draw_aspect_ratio(std::uint64_t seed, std::uint64_t index) {
  const double kind = draw(seed, index, kDrawRatioKind);
  if (kind < 0.45) return 4.0 / 3.0;
  if (kind < 0.53) return 1.5;
  if (kind < 0.75) return 1.0;
  return std::exp(draw(seed, index, kDrawRatio) * std::log(1.6));
}

ImageLayout draw_layout(std::uint64_t seed, std::uint64_t index, int source_width,
                        int source_height) {
  ImageLayout layout;
  // Target size.
  double short_side =
      kShortSideMedian *
      std::exp(kShortSideSigma * draw_normal(seed, index, kDrawShortSide1, kDrawShortSide2));
  short_side = std::clamp(short_side, double{kMinShortSide}, double{kMaxShortSide});
  const double ratio = draw_aspect_ratio(seed, index);
  double long_side = short_side * ratio;
  if (long_side > kMaxLongSide) {
    long_side = kMaxLongSide;
    short_side = long_side / ratio;
  }
  const bool portrait = draw(seed, index, kDrawPortrait) < kPortraitProbability;
  double width = portrait ? short_side : long_side;
  double height = portrait ? long_side : short_side;

  // The largest crop of the target's aspect ratio; shrink the target if the photo is smaller.
  const double aspect = width / height;
  double max_crop_width = source_width, max_crop_height = source_width / aspect;
  if (max_crop_height > source_height) {
    max_crop_height = source_height;
    max_crop_width = source_height * aspect;
  }
  if (width > max_crop_width) {
    width = max_crop_width;
    height = max_crop_height;
  }
  layout.width = std::max(1, static_cast<int>(std::lround(width)));
  layout.height = std::max(1, static_cast<int>(std::lround(height)));

  // Crop: a fraction of the largest crop's sides, uniform in [min_side, 1], placed uniformly.
  const double min_side = std::min(1.0, std::max(kMinCropSide, width / max_crop_width));
  const double side = min_side + (1.0 - min_side) * draw(seed, index, kDrawCropSide);
  const int crop_width =
      std::clamp(static_cast<int>(std::lround(side * max_crop_width)), 1, source_width);
  const int crop_height =
      std::clamp(static_cast<int>(std::lround(side * max_crop_height)), 1, source_height);
  const int x = static_cast<int>(draw(seed, index, kDrawCropX) * (source_width - crop_width + 1));
  const int y = static_cast<int>(draw(seed, index, kDrawCropY) * (source_height - crop_height + 1));
  layout.crop = cv::Rect(x, y, crop_width, crop_height);

  layout.flip = draw(seed, index, kDrawFlip) < 0.5;
  const double quality =
      kQualityMean + kQualitySigma * draw_normal(seed, index, kDrawQuality1, kDrawQuality2);
  layout.quality = std::clamp(static_cast<int>(std::lround(quality)), kMinQuality, kMaxQuality);
  const double encoding = draw(seed, index, kDrawEncoding);
  if (encoding < kGrayProbability) {
    layout.encoding = Encoding::kGray;
  } else if (encoding < kGrayProbability + kProgressiveProbability) {
    layout.encoding = Encoding::kProgressive420;
  } else if (encoding < kGrayProbability + kProgressiveProbability + kFullChromaProbability) {
    layout.encoding = Encoding::kBaseline444;
  }
  return layout;
}

// ---- Photos and JPEG -------------------------------------------------------------------------

// Decodes a photo with the largest DCT scaling factor (at most 1) that keeps its long side within
// kMaxSourceSide and its RGB pixels within max_bytes.
SourcePhoto load_photo(const std::string& path, double max_bytes) {
  const std::vector<std::uint8_t> jpeg = read_whole_file(path);
  // Through libjpeg's warnings, as PIL and OpenCV read photos; the accurate IDCT. The 4 bytes
  // a pixel budget: 3 of RGB and 1/3 more for the pyramid below.
  RgbImage rgb;
  try {
    rgb = decode_jpeg(jpeg, {.fast_dct = false,
                             .max_side = kMaxSourceSide,
                             .max_pixels = max_bytes / 4.0,
                             .warnings_are_errors = false});
  } catch (const EncodeError& error) {
    throw EncodeError(path + ": " + error.what());
  }
  const cv::Mat decoded = cv::Mat(rgb.height, rgb.width, CV_8UC3, rgb.pixels.data()).clone();
  SourcePhoto photo;
  photo.levels.push_back(decoded);
  while (std::min(photo.levels.back().cols, photo.levels.back().rows) >= 2 * kMinPyramidSide) {
    const cv::Mat& last = photo.levels.back();
    // An even-sized region, so that OpenCV takes its exact 2x2 averaging path.
    const cv::Mat even = last(cv::Rect(0, 0, last.cols & ~1, last.rows & ~1));
    cv::Mat half;
    cv::resize(even, half, cv::Size(even.cols / 2, even.rows / 2), 0, 0, cv::INTER_AREA);
    photo.levels.push_back(half);
  }
  return photo;
}

std::vector<std::uint8_t> compress(const RgbImage& image, int quality, Encoding encoding) {
  using Chroma = JpegEncodeOptions::Chroma;
  JpegEncodeOptions options{.quality = quality};
  if (encoding == Encoding::kBaseline444) options.chroma = Chroma::k444;
  if (encoding == Encoding::kGray) options.chroma = Chroma::kGray;
  if (encoding == Encoding::kProgressive420) options.progressive = true;
  return encode_jpeg(image, options);
}

// Crops, resizes (INTER_AREA), flips and encodes one image from a decoded photo.
std::vector<std::uint8_t> make_image(const SourcePhoto& photo, const ImageLayout& layout) {
  // The smallest pyramid level where the crop still has at least the target's size.
  std::size_t level = 0;
  while (level + 1 < photo.levels.size() && (layout.crop.width >> (level + 1)) >= layout.width &&
         (layout.crop.height >> (level + 1)) >= layout.height) {
    ++level;
  }
  const cv::Mat& source = photo.levels[level];
  cv::Rect crop(layout.crop.x >> level, layout.crop.y >> level,
                std::max(1, layout.crop.width >> level), std::max(1, layout.crop.height >> level));
  crop &= cv::Rect(0, 0, source.cols, source.rows);

  RgbImage image;
  image.width = layout.width;
  image.height = layout.height;
  image.pixels.resize(image.byte_size());
  cv::Mat target(image.height, image.width, CV_8UC3, image.pixels.data());
  cv::resize(source(crop), target, target.size(), 0, 0, cv::INTER_AREA);
  if (layout.flip) cv::flip(target, target, 1);
  return compress(image, layout.quality, layout.encoding);
}

// ---- Files -------------------------------------------------------------------------------------

// Writes `bytes` as a new file at `path` (inside the staged tree, which is renamed into place as
// a whole, so the files themselves need no temporary names).
void write_new_file(const std::string& path, std::span<const std::uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path, "create", errno);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw IoError(path, "write", error);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw IoError(path, "close", errno);
}

std::string class_name(int class_index) {
  char name[32];
  std::snprintf(name, sizeof name, "c%03d", class_index);
  return name;
}

std::string image_name(std::uint64_t index) {
  char name[40];
  std::snprintf(name, sizeof name, "%08llu.jpg", static_cast<unsigned long long>(index));
  return name;
}

// Switches OpenCV's own parallelism off (the workers already use every core) and restores it.
class SerialOpenCv {
 public:
  SerialOpenCv() : previous_(cv::getNumThreads()) { cv::setNumThreads(0); }
  ~SerialOpenCv() { cv::setNumThreads(previous_); }
  SerialOpenCv(const SerialOpenCv&) = delete;
  SerialOpenCv& operator=(const SerialOpenCv&) = delete;

 private:
  int previous_;
};

// ---- Photo search ------------------------------------------------------------------------------

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The pixel count of a file named <W>x<H>.<ext>, or -1 for other names.
long long resolution_in_name(const fs::path& path) {
  const std::string stem = path.stem().string();
  unsigned long long width = 0, height = 0;
  int consumed = 0;
  if (std::sscanf(stem.c_str(), "%llux%llu%n", &width, &height, &consumed) == 2 &&
      consumed == static_cast<int>(stem.size())) {
    return static_cast<long long>(width * height);
  }
  return -1;
}

bool is_known_non_photo(const fs::path& path) {
  const std::string text = path.string();
  if (text.rfind("/usr/share/", 0) != 0) return false;
  if (kNonPhotoBackgroundStems.count(path.stem().string()) != 0) return true;
  // .../wallpapers/<Name>/contents/images/<file>
  const fs::path package = path.parent_path().parent_path().parent_path();
  return package.parent_path().filename() == "wallpapers" &&
         kNonPhotoWallpaperFolders.count(package.filename().string()) != 0;
}

}  // namespace

std::vector<std::string> default_photo_dirs() {
  return {"/usr/share/wallpapers", "/usr/share/backgrounds"};
}

const char* photo_packages_hint() {
  return "install the Debian packages plasma-workspace-wallpapers, lomiri-wallpapers-16.04 and "
         "mate-backgrounds (apt-get install plasma-workspace-wallpapers lomiri-wallpapers-16.04 "
         "mate-backgrounds), or name folders of JPEG photographs";
}

std::vector<std::string> find_source_photos(const std::vector<std::string>& dirs) {
  // Per folder: the files, and the largest <W>x<H>-named one. Symbolic links are followed (the
  // canonical path removes duplicates).
  std::map<fs::path, std::vector<fs::path>> by_folder;
  for (const std::string& dir : dirs) {
    std::error_code error;
    if (!fs::is_directory(dir, error)) continue;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, error);
    for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      const fs::directory_entry& entry = *it;
      const fs::path& path = entry.path();
      std::error_code status_error;
      if (entry.is_directory(status_error)) {
        if (path.filename() == "images_dark") it.disable_recursion_pending();
        continue;
      }
      if (!entry.is_regular_file(status_error)) continue;
      const std::string extension = lowercase(path.extension().string());
      if (extension != ".jpg" && extension != ".jpeg") continue;
      if (lowercase(path.stem().string()) == "screenshot") continue;
      if (is_known_non_photo(path)) continue;
      by_folder[path.parent_path()].push_back(path);
    }
  }
  std::set<std::string> photos;
  for (const auto& [folder, files] : by_folder) {
    const fs::path* largest = nullptr;
    long long largest_pixels = -1;
    for (const fs::path& file : files) {
      const long long pixels = resolution_in_name(file);
      if (pixels < 0) {
        std::error_code error;
        const fs::path canonical = fs::weakly_canonical(file, error);
        photos.insert(error ? file.string() : canonical.string());
      } else if (pixels > largest_pixels) {
        largest = &file;
        largest_pixels = pixels;
      }
    }
    if (largest != nullptr) {
      std::error_code error;
      const fs::path canonical = fs::weakly_canonical(*largest, error);
      photos.insert(error ? largest->string() : canonical.string());
    }
  }
  return {photos.begin(), photos.end()};
}

// ---- Generation --------------------------------------------------------------------------------

namespace {

void check_options(const ImagenetLikeOptions& options) {
  if (options.output_dir.empty()) throw ConfigError("imagenet-like: no output folder given");
  if (options.num_classes < 1 || options.num_classes > kMaxImagenetLikeClasses) {
    throw ConfigError("imagenet-like: the number of classes must be in 1.." +
                      std::to_string(kMaxImagenetLikeClasses) + ", not " +
                      std::to_string(options.num_classes));
  }
  if (options.count < 1 || options.count > kMaxImagenetLikeCount) {
    throw ConfigError("imagenet-like: the number of images must be in 1.." +
                      std::to_string(kMaxImagenetLikeCount) + ", not " +
                      std::to_string(options.count));
  }
}

// The photos under options.photo_dirs (or the default folders); throws ConfigError naming the
// folders searched and the packages to install when there is none.
std::vector<std::string> source_photos_or_throw(const ImagenetLikeOptions& options) {
  const std::vector<std::string> dirs =
      options.photo_dirs.empty() ? default_photo_dirs() : options.photo_dirs;
  std::vector<std::string> paths = find_source_photos(dirs);
  if (paths.empty()) {
    std::string searched;
    for (const std::string& dir : dirs) searched += (searched.empty() ? "" : ", ") + dir;
    throw ConfigError("imagenet-like: no source photographs (*.jpg) found in " + searched + "; " +
                      photo_packages_hint());
  }
  return paths;
}

// Creates the folders c000.. of every class under `root`; returns their paths.
std::vector<std::string> create_class_dirs(const std::string& root, int num_classes) {
  std::error_code error;
  std::vector<std::string> class_dirs(num_classes);
  for (int c = 0; c < num_classes; ++c) {
    class_dirs[c] = (fs::path(root) / class_name(c)).string();
    fs::create_directories(class_dirs[c], error);
    if (error) throw IoError(class_dirs[c], "create the folder", error.value());
  }
  return class_dirs;
}

// The indices of the photos that some of the `count` images is cut from, ascending.
std::vector<int> photos_to_load(std::uint64_t seed, std::uint64_t count, std::size_t num_photos) {
  std::vector<char> needed(num_photos, 0);
  for (std::uint64_t i = 0; i < count; ++i) needed[draw_photo(seed, i, num_photos)] = 1;
  std::vector<int> to_load;
  for (std::size_t p = 0; p < num_photos; ++p) {
    if (needed[p]) to_load.push_back(static_cast<int>(p));
  }
  return to_load;
}

// Loads the photos of `to_load`, each once, in parallel, sharing the cache budget between them;
// the others stay empty. Progress is reported as 0 of `count` images.
std::vector<SourcePhoto> load_photos(const std::vector<std::string>& paths,
                                     const std::vector<int>& to_load, int workers,
                                     const ImagenetLikeOptions& options) {
  const std::uint64_t count = options.count;
  const double max_photo_bytes = kCacheBudgetBytes / std::max<std::size_t>(1, to_load.size());
  std::vector<SourcePhoto> photos(paths.size());
  auto tick_zero = [&](std::uint64_t) {
    if (options.on_progress) options.on_progress(0, count);
  };
  parallel_for(
      to_load.size(), workers,
      [&](std::uint64_t k) { photos[to_load[k]] = load_photo(paths[to_load[k]], max_photo_bytes); },
      tick_zero);
  return photos;
}

struct GeneratedTotals {
  std::uint64_t bytes = 0;
  std::uint64_t width = 0;   // summed over the images
  std::uint64_t height = 0;  // summed over the images
};

// Cuts, encodes and writes the images 0..options.count-1 in parallel, image i into the folder of
// its drawn class.
GeneratedTotals write_images(const std::vector<SourcePhoto>& photos,
                             const std::vector<std::string>& class_dirs, int workers,
                             const ImagenetLikeOptions& options) {
  const std::uint64_t count = options.count;
  const std::uint64_t seed = options.seed;
  std::atomic<std::uint64_t> total_bytes{0}, total_width{0}, total_height{0};
  parallel_for(
      count, workers,
      [&](std::uint64_t i) {
        const SourcePhoto& photo = photos[draw_photo(seed, i, photos.size())];
        const ImageLayout layout = draw_layout(seed, i, photo.width(), photo.height());
        const std::vector<std::uint8_t> jpeg = make_image(photo, layout);
        const int class_index = draw_class(seed, i, options.num_classes);
        write_new_file((fs::path(class_dirs[class_index]) / image_name(i)).string(), jpeg);
        total_bytes += jpeg.size();
        total_width += static_cast<std::uint64_t>(layout.width);
        total_height += static_cast<std::uint64_t>(layout.height);
      },
      [&](std::uint64_t done) {
        if (options.on_progress) options.on_progress(done, count);
      });
  return {total_bytes, total_width, total_height};
}

// The content of kImagenetLikeMarker.
std::string marker_json(std::uint64_t count, int num_classes, std::uint64_t seed) {
  return "{\"generator\": \"ffcv write imagenet-like\", \"count\": " + std::to_string(count) +
         ", \"classes\": " + std::to_string(num_classes) + ", \"seed\": " + std::to_string(seed) +
         "}\n";
}

}  // namespace

ImagenetLikeSummary generate_imagenet_like(const ImagenetLikeOptions& options) {
  check_options(options);
  const std::vector<std::string> paths = source_photos_or_throw(options);
  const std::uint64_t count = options.count;
  const std::uint64_t seed = options.seed;
  const int workers = resolve_worker_count(options.num_workers);

  // Folders, built under a temporary name and renamed into place when complete.
  StagedDirectory tree(options.output_dir, kImagenetLikeMarker, options.replace_any_folder);
  const std::vector<std::string> class_dirs = create_class_dirs(tree.path(), options.num_classes);

  const std::vector<int> to_load = photos_to_load(seed, count, paths.size());
  const SerialOpenCv serial_opencv;
  const std::vector<SourcePhoto> photos = load_photos(paths, to_load, workers, options);
  const GeneratedTotals totals = write_images(photos, class_dirs, workers, options);
  if (options.on_progress) options.on_progress(count, count);
  tree.commit(marker_json(count, options.num_classes, seed));

  ImagenetLikeSummary summary;
  summary.count = count;
  summary.total_bytes = totals.bytes;
  summary.mean_width = count == 0 ? 0.0 : static_cast<double>(totals.width) / count;
  summary.mean_height = count == 0 ? 0.0 : static_cast<double>(totals.height) / count;
  summary.photos_used = static_cast<int>(to_load.size());
  return summary;
}

}  // namespace ffcv::tools
