// Tests of the ImageNet-like JPEG generator (tools/sources/imagenet_like.hpp): the photo search
// rules, the error without photos, and, where Debian's wallpaper packages are installed, that
// the output is the same for 1 and 2 workers, decodes, and has ImageNet-like sizes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/errors.hpp"
#include "sources/imagenet_like.hpp"
#include "test_support.hpp"

using ffcv::test::TempDir;

namespace {

namespace fs = std::filesystem;

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x";
}

// Every regular file under `root`, by path relative to it.
std::map<std::string, std::vector<std::uint8_t>> read_tree(const fs::path& root) {
  std::map<std::string, std::vector<std::uint8_t>> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    // The generator's marker file (hidden) is checked apart.
    if (entry.is_regular_file() && !entry.path().filename().string().starts_with(".")) {
      files[fs::relative(entry.path(), root).string()] =
          ffcv::test::read_file(entry.path().string());
    }
  }
  return files;
}

enum class Kind { kBaseline420, kBaseline444, kProgressive, kGray, kOther };

// Classifies a JPEG by its start-of-frame segment.
Kind jpeg_kind(const std::vector<std::uint8_t>& jpeg) {
  std::size_t at = 2;
  while (at + 4 <= jpeg.size() && jpeg[at] == 0xFF) {
    const int marker = jpeg[at + 1];
    const std::size_t length = (std::size_t{jpeg[at + 2]} << 8) | jpeg[at + 3];
    if ((marker == 0xC0 || marker == 0xC2) && at + 12 <= jpeg.size()) {
      const int components = jpeg[at + 9];
      if (components == 1) return Kind::kGray;
      if (marker == 0xC2) return Kind::kProgressive;
      const int luma_sampling = jpeg[at + 11];
      if (luma_sampling == 0x22) return Kind::kBaseline420;
      if (luma_sampling == 0x11) return Kind::kBaseline444;
      return Kind::kOther;
    }
    at += 2 + length;
  }
  return Kind::kOther;
}

}  // namespace

TEST_CASE("find_source_photos applies the wallpaper rules", "[imagenet_like]") {
  const TempDir temp;
  const fs::path root = temp.path();
  touch(root / "a" / "photo.jpg");
  touch(root / "a" / "Second.JPEG");
  touch(root / "a" / "screenshot.jpg");
  touch(root / "a" / "art.png");
  touch(root / "a" / "notes.txt");
  // One wallpaper in several resolutions: only the largest is taken, links are followed.
  touch(root / "w" / "contents" / "images" / "1280x800.jpg");
  touch(root / "w" / "contents" / "images" / "2560x1600.jpg");
  fs::create_symlink("2560x1600.jpg", root / "w" / "contents" / "images" / "1920x1200.jpg");
  touch(root / "w" / "contents" / "images_dark" / "2560x1600.jpg");
  fs::create_symlink(root / "a" / "photo.jpg", root / "link.jpg");

  const std::vector<std::string> photos =
      ffcv::tools::find_source_photos({root.string(), (root / "missing").string()});
  const fs::path base = fs::canonical(root);
  const std::vector<std::string> expected = {
      (base / "a" / "Second.JPEG").string(), (base / "a" / "photo.jpg").string(),
      (base / "w" / "contents" / "images" / "2560x1600.jpg").string()};
  CHECK(photos == expected);
  CHECK(ffcv::tools::find_source_photos({(root / "missing").string()}).empty());
}

TEST_CASE("generate_imagenet_like without photos names the folders and packages",
          "[imagenet_like]") {
  const TempDir temp;
  const fs::path root = temp.path();
  ffcv::tools::ImagenetLikeOptions options;
  options.output_dir = (root / "out").string();
  options.count = 3;
  options.photo_dirs = {(root / "no_photos_here").string()};
  try {
    ffcv::tools::generate_imagenet_like(options);
    FAIL("expected a ConfigError");
  } catch (const ffcv::ConfigError& error) {
    const std::string message = error.what();
    CHECK(message.find("no_photos_here") != std::string::npos);
    CHECK(message.find("plasma-workspace-wallpapers") != std::string::npos);
    CHECK(message.find("mate-backgrounds") != std::string::npos);
  }
}

TEST_CASE("generate_imagenet_like reports a photo it cannot decode", "[imagenet_like]") {
  const TempDir temp;
  const fs::path root = temp.path();
  touch(root / "photos" / "broken.jpg");
  ffcv::tools::ImagenetLikeOptions options;
  options.output_dir = (root / "out").string();
  options.count = 4;
  options.num_workers = 2;
  options.photo_dirs = {(root / "photos").string()};
  CHECK_THROWS_AS(ffcv::tools::generate_imagenet_like(options), ffcv::EncodeError);
  CHECK_THROWS_WITH(ffcv::tools::generate_imagenet_like(options),
                    Catch::Matchers::Contains("broken.jpg"));
  options.output_dir.clear();
  CHECK_THROWS_AS(ffcv::tools::generate_imagenet_like(options), ffcv::ConfigError);
}

TEST_CASE("generate_imagenet_like is deterministic and ImageNet-like", "[imagenet_like]") {
  if (ffcv::tools::find_source_photos(ffcv::tools::default_photo_dirs()).empty()) {
    ffcv::test::skip_test(std::string("no source photos installed (") +
                          ffcv::tools::photo_packages_hint() + ")");
    return;
  }
  const TempDir temp;
  const fs::path root = temp.path();
  constexpr std::uint64_t kCount = 60;
  constexpr int kClasses = 10;
  ffcv::tools::ImagenetLikeOptions options;
  options.count = kCount;
  options.num_classes = kClasses;
  options.seed = 0;  // its first 60 images include every encoding (checked below)

  std::vector<std::pair<std::uint64_t, std::uint64_t>> progress;
  options.output_dir = (root / "one").string();
  options.num_workers = 1;
  options.on_progress = [&](std::uint64_t done, std::uint64_t total) {
    progress.emplace_back(done, total);
  };
  const ffcv::tools::ImagenetLikeSummary one = ffcv::tools::generate_imagenet_like(options);

  options.output_dir = (root / "two").string();
  options.num_workers = 2;
  options.on_progress = nullptr;
  const ffcv::tools::ImagenetLikeSummary two = ffcv::tools::generate_imagenet_like(options);

  // Progress: non-decreasing, ends with done == total.
  REQUIRE(!progress.empty());
  CHECK(progress.back() == std::make_pair(kCount, kCount));
  for (std::size_t k = 1; k < progress.size(); ++k) {
    CHECK(progress[k].first >= progress[k - 1].first);
    CHECK(progress[k].second == kCount);
  }

  // Same bytes whatever the number of workers.
  const auto files_one = read_tree(root / "one");
  const auto files_two = read_tree(root / "two");
  REQUIRE(files_one.size() == kCount);
  CHECK(fs::is_regular_file(root / "one" / ffcv::tools::kImagenetLikeMarker));
  CHECK(files_one == files_two);
  CHECK(one.total_bytes == two.total_bytes);
  CHECK(one.mean_width == two.mean_width);
  CHECK(one.photos_used == two.photos_used);
  for (int c = 0; c < kClasses; ++c) {
    char name[8];
    std::snprintf(name, sizeof name, "c%03d", c);
    CHECK(fs::is_directory(root / "one" / name));
  }

  // Every file decodes, with ImageNet-like sizes; the summary matches the files.
  std::uint64_t total_bytes = 0;
  double total_width = 0, total_height = 0;
  std::map<Kind, int> kinds;
  for (const auto& [name, jpeg] : files_one) {
    INFO(name);
    CHECK(name.size() == std::string("c000/00000000.jpg").size());
    CHECK(name.substr(name.size() - 4) == ".jpg");
    const ffcv::JpegInfo info = ffcv::read_jpeg_info(jpeg);
    const ffcv::RgbImage image = ffcv::decode_jpeg(jpeg);
    CHECK(image.width == info.width);
    CHECK(image.height == info.height);
    CHECK(std::min(info.width, info.height) >= 200);
    CHECK(std::max(info.width, info.height) <= 1000);
    CHECK(jpeg.size() > 2000);
    total_bytes += jpeg.size();
    total_width += info.width;
    total_height += info.height;
    ++kinds[jpeg_kind(jpeg)];
  }
  CHECK(one.count == kCount);
  CHECK(one.total_bytes == total_bytes);
  CHECK(one.mean_width == Approx(total_width / kCount));
  CHECK(one.mean_height == Approx(total_height / kCount));
  CHECK(one.mean_width > 330);
  CHECK(one.mean_width < 500);
  CHECK(one.mean_height > 290);
  CHECK(one.mean_height < 430);
  const double mean_bytes = static_cast<double>(total_bytes) / kCount;
  CHECK(mean_bytes > 10e3);
  CHECK(mean_bytes < 200e3);
  CHECK(one.photos_used >= 10);
  CHECK(kinds[Kind::kBaseline420] >= 50);
  CHECK(kinds[Kind::kBaseline444] >= 1);
  CHECK(kinds[Kind::kProgressive] >= 1);
  CHECK(kinds[Kind::kGray] >= 1);
  CHECK(kinds[Kind::kOther] == 0);
}
