// resize_rgb against OpenCV's cv::resize (INTER_AREA, INTER_LINEAR) on integer regions, against
// slow double-precision references on fractional regions, and on constant images and bad
// arguments. Accuracy figures are printed (one line per group) for the record.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "ffcv/image/resize.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;

namespace {

struct Image {
  int width = 0;
  int height = 0;
  std::size_t stride = 0;
  std::vector<std::uint8_t> pixels;
  const std::uint8_t* at(int x, int y) const { return &pixels[y * stride + 3 * x]; }
};

// Natural-like content: smooth gradients and waves per channel, a few hard-edged patches and
// Gaussian noise. `pad` adds bytes at the end of each row (stride > width*3). The buffer ends
// exactly at the last pixel, so reads past the image show up under AddressSanitizer.
Image natural_image(int width, int height, std::uint32_t seed, int pad = 0) {
  Image image{width, height, static_cast<std::size_t>(width) * 3 + pad, {}};
  image.pixels.assign(image.stride * (height - 1) + static_cast<std::size_t>(width) * 3, 0);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 10);
  std::uniform_real_distribution<double> uniform(0, 1);
  struct Patch {
    double x0, y0, x1, y1, value[3];
  };
  std::vector<Patch> patches(6);
  for (Patch& p : patches) {
    p.x0 = uniform(rng) * width;
    p.y0 = uniform(rng) * height;
    p.x1 = p.x0 + uniform(rng) * width / 3;
    p.y1 = p.y0 + uniform(rng) * height / 3;
    for (double& v : p.value) v = uniform(rng) * 255;
  }
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double v[3] = {40 + 150.0 * x / width + 30 * std::sin(y / 23.0),
                     200 - 120.0 * y / height + 25 * std::cos(x / 17.0 + y / 31.0),
                     128 + 60 * std::sin((x + 2 * y) / 41.0)};
      for (const Patch& p : patches) {
        if (x >= p.x0 && x < p.x1 && y >= p.y0 && y < p.y1) {
          for (int c = 0; c < 3; ++c) v[c] = 0.3 * v[c] + 0.7 * p.value[c];
        }
      }
      std::uint8_t* out = &image.pixels[y * image.stride + 3 * x];
      for (int c = 0; c < 3; ++c) {
        out[c] = static_cast<std::uint8_t>(std::clamp(std::lround(v[c] + noise(rng)), 0L, 255L));
      }
    }
  }
  return image;
}

struct Region {
  double x, y, w, h;
  int dst_width, dst_height;
};

std::vector<std::uint8_t> ours(const Image& image, const Region& r, Interpolation interpolation,
                               std::vector<std::uint8_t>& scratch) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(r.dst_width) * r.dst_height * 3);
  const ResizeSource source{
      image.pixels.data(), image.width, image.height, image.stride, r.x, r.y, r.w, r.h};
  resize_rgb(source, out.data(), r.dst_width, r.dst_height, interpolation, scratch);
  return out;
}

std::vector<std::uint8_t> opencv(const Image& image, const Region& r, int flags) {
  const cv::Mat whole(image.height, image.width, CV_8UC3,
                      const_cast<std::uint8_t*>(image.pixels.data()), image.stride);
  const cv::Mat roi = whole(cv::Rect(static_cast<int>(r.x), static_cast<int>(r.y),
                                     static_cast<int>(r.w), static_cast<int>(r.h)));
  cv::Mat out;
  cv::resize(roi, out, cv::Size(r.dst_width, r.dst_height), 0, 0, flags);
  REQUIRE(out.isContinuous());
  return {out.data, out.data + out.total() * 3};
}

// Exact box filter: every output is the coverage-weighted mean of the source area it maps to.
std::vector<double> reference_area(const Image& image, const Region& r) {
  const double sx = r.w / r.dst_width, sy = r.h / r.dst_height;
  std::vector<double> out(static_cast<std::size_t>(r.dst_width) * r.dst_height * 3);
  for (int dy = 0; dy < r.dst_height; ++dy) {
    const double ay = r.y + dy * sy, by = r.y + (dy + 1) * sy;
    for (int dx = 0; dx < r.dst_width; ++dx) {
      const double ax = r.x + dx * sx, bx = r.x + (dx + 1) * sx;
      double sum[3] = {0, 0, 0};
      for (int j = static_cast<int>(std::floor(ay)); j < by && j < image.height; ++j) {
        const double cy = std::min(by, j + 1.0) - std::max(ay, static_cast<double>(j));
        if (cy <= 0) continue;
        for (int i = static_cast<int>(std::floor(ax)); i < bx && i < image.width; ++i) {
          const double cx = std::min(bx, i + 1.0) - std::max(ax, static_cast<double>(i));
          if (cx <= 0) continue;
          for (int c = 0; c < 3; ++c) sum[c] += cx * cy * image.at(i, j)[c];
        }
      }
      for (int c = 0; c < 3; ++c) {
        out[(static_cast<std::size_t>(dy) * r.dst_width + dx) * 3 + c] = sum[c] / (sx * sy);
      }
    }
  }
  return out;
}

// Bilinear with half-pixel centres, clamped to the source pixels the region touches.
std::vector<double> reference_linear(const Image& image, const Region& r) {
  const int x_first = static_cast<int>(std::floor(r.x));
  const int x_last = static_cast<int>(std::ceil(r.x + r.w)) - 1;
  const int y_first = static_cast<int>(std::floor(r.y));
  const int y_last = static_cast<int>(std::ceil(r.y + r.h)) - 1;
  auto tap = [](double centre, int first, int last, int& index, double& fraction) {
    index = static_cast<int>(std::floor(centre));
    fraction = centre - index;
    if (index < first) index = first, fraction = 0;
    if (index >= last) index = last, fraction = 0;
  };
  std::vector<double> out(static_cast<std::size_t>(r.dst_width) * r.dst_height * 3);
  for (int dy = 0; dy < r.dst_height; ++dy) {
    int j;
    double fy;
    tap(r.y + (dy + 0.5) * r.h / r.dst_height - 0.5, y_first, y_last, j, fy);
    for (int dx = 0; dx < r.dst_width; ++dx) {
      int i;
      double fx;
      tap(r.x + (dx + 0.5) * r.w / r.dst_width - 0.5, x_first, x_last, i, fx);
      const int i1 = std::min(i + 1, x_last), j1 = std::min(j + 1, y_last);
      for (int c = 0; c < 3; ++c) {
        const double top = (1 - fx) * image.at(i, j)[c] + fx * image.at(i1, j)[c];
        const double bottom = (1 - fx) * image.at(i, j1)[c] + fx * image.at(i1, j1)[c];
        out[(static_cast<std::size_t>(dy) * r.dst_width + dx) * 3 + c] =
            (1 - fy) * top + fy * bottom;
      }
    }
  }
  return out;
}

// Max and mean absolute difference, accumulated over many cases.
struct Diff {
  int max = 0;
  double sum = 0;
  std::size_t count = 0;
  std::size_t cases = 0;
  std::string worst;

  int add(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
          const std::string& label) {
    REQUIRE(a.size() == b.size());
    int case_max = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const int d = std::abs(a[i] - b[i]);
      case_max = std::max(case_max, d);
      sum += d;
    }
    count += a.size();
    ++cases;
    if (case_max > max || worst.empty()) worst = label;  // the first case at the max
    max = std::max(max, case_max);
    return case_max;
  }
  void report(const char* what) const {
    std::printf("[resize] %-44s %4zu cases: max |diff| %d, mean |diff| %.4f (first at max: %s)\n",
                what, cases, max, count ? sum / count : 0.0, worst.c_str());
  }
};

std::vector<std::uint8_t> round_half_up(const std::vector<double>& values) {
  std::vector<std::uint8_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[i] = static_cast<std::uint8_t>(std::clamp(std::floor(values[i] + 0.5), 0.0, 255.0));
  }
  return out;
}

std::string label(const Region& r) {
  char text[128];
  std::snprintf(text, sizeof text, "(%g,%g %gx%g)->%dx%d", r.x, r.y, r.w, r.h, r.dst_width,
                r.dst_height);
  return text;
}

// An integer region of size w x h placed at a random position (often touching an edge).
Region place(const Image& image, int w, int h, int dst_width, int dst_height, std::mt19937& rng) {
  auto position = [&](int extent, int size) {
    switch (rng() % 4) {
      case 0:
        return 0;
      case 1:
        return extent - size;
      default:
        return static_cast<int>(rng() % (extent - size + 1));
    }
  };
  return {static_cast<double>(position(image.width, w)),
          static_cast<double>(position(image.height, h)),
          static_cast<double>(w),
          static_cast<double>(h),
          dst_width,
          dst_height};
}

// Integer-region geometries: named ones per category, then random ones.
std::vector<std::pair<std::string, Region>> integer_cases(const Image& image) {
  std::mt19937 rng(2024);
  std::vector<std::pair<std::string, Region>> cases;
  auto add = [&](const std::string& group, int w, int h, int dw, int dh) {
    cases.emplace_back(group, place(image, w, h, dw, dh, rng));
  };
  // Downscaling 1.1x..10x, integer and non-integer ratios.
  for (double f : {1.1, 1.25, 1.34, 1.5, 1.77, 2.0, 2.5, 3.0, 4.0, 5.3, 7.0, 10.0}) {
    for (int w : {500, 331, 224, 150}) {
      const int h = std::min(image.height, w * 3 / 4 + 17);
      add("down", w, h, std::max(1, static_cast<int>(w / f)),
          std::max(1, static_cast<int>(h / (f * 1.07))));
    }
  }
  add("down", 300, 260, 224, 224);
  add("down", 300, 260, 160, 160);
  add("down", 300, 260, 192, 192);
  add("down", 500, 375, 224, 224);
  add("down", 256, 256, 128, 128);
  add("down", 300, 300, 100, 100);
  add("down", 480, 360, 48, 36);
  // Upscaling 1.5x..3x.
  for (double f : {1.5, 2.0, 2.3, 3.0}) {
    for (int w : {150, 97, 64, 31}) {
      const int h = w * 2 / 3 + 5;
      add("up", w, h, static_cast<int>(w * f), static_cast<int>(h * f * 1.05));
    }
  }
  add("up", 97, 61, 224, 224);
  add("up", 2, 3, 7, 5);
  // One axis up, the other down.
  add("mixed", 300, 100, 224, 224);
  add("mixed", 100, 300, 224, 224);
  add("mixed", 400, 150, 160, 192);
  add("mixed", 151, 373, 224, 160);
  add("mixed", 500, 40, 50, 120);
  add("mixed", 37, 350, 111, 35);
  // 1-pixel outputs and regions.
  add("1px", 300, 260, 1, 1);
  add("1px", 500, 375, 1, 1);
  add("1px", 7, 5, 1, 1);
  add("1px", 1, 1, 1, 1);
  add("1px", 1, 1, 5, 3);
  add("1px", 500, 375, 1, 224);
  add("1px", 500, 375, 224, 1);
  add("1px", 1, 200, 10, 50);
  // Random geometries of every kind.
  for (int i = 0; i < 300; ++i) {
    const int w = 1 + static_cast<int>(rng() % image.width);
    const int h = 1 + static_cast<int>(rng() % image.height);
    const int dw = 1 + static_cast<int>(rng() % 300), dh = 1 + static_cast<int>(rng() % 300);
    add("random", w, h, dw, dh);
  }
  return cases;
}

}  // namespace

TEST_CASE("area resize matches OpenCV INTER_AREA on integer regions", "[resize]") {
  const Image image = natural_image(500, 375, 1);
  std::vector<std::uint8_t> scratch;
  std::map<std::string, Diff> by_group;
  Diff all, ours_exact, opencv_exact;
  for (const auto& [group, region] : integer_cases(image)) {
    const auto mine = ours(image, region, Interpolation::kArea, scratch);
    const auto theirs = opencv(image, region, cv::INTER_AREA);
    INFO(group << " " << label(region));
    CHECK(by_group[group].add(mine, theirs, label(region)) <= 1);
    all.add(mine, theirs, label(region));
    // Both axes shrinking: the filter is the exact box; see how close each side is to it.
    // (Growing, OpenCV may pick the pixel before an exact cell boundary, and so do we.)
    if (region.w >= region.dst_width && region.h >= region.dst_height) {
      const auto exact = round_half_up(reference_area(image, region));
      CHECK(ours_exact.add(mine, exact, label(region)) <= 1);
      opencv_exact.add(theirs, exact, label(region));
    }
  }
  for (const auto& [group, diff] : by_group) diff.report(("INTER_AREA vs ours, " + group).c_str());
  all.report("INTER_AREA vs ours, all");
  ours_exact.report("ours vs exact box (shrinking cases)");
  opencv_exact.report("INTER_AREA vs exact box (shrinking cases)");
  CHECK(all.sum / all.count < 0.1);
  CHECK(ours_exact.sum / ours_exact.count < 0.01);
}

TEST_CASE("linear resize matches OpenCV INTER_LINEAR on integer regions", "[resize]") {
  const Image image = natural_image(500, 375, 2);
  std::vector<std::uint8_t> scratch;
  Diff all, ours_exact, opencv_exact;
  for (const auto& [group, region] : integer_cases(image)) {
    const auto mine = ours(image, region, Interpolation::kLinear, scratch);
    const auto theirs = opencv(image, region, cv::INTER_LINEAR);
    INFO(group << " " << label(region));
    CHECK(all.add(mine, theirs, label(region)) <= 1);
    const auto exact = round_half_up(reference_linear(image, region));
    ours_exact.add(mine, exact, label(region));
    opencv_exact.add(theirs, exact, label(region));
  }
  all.report("INTER_LINEAR vs ours, all");
  ours_exact.report("ours vs exact bilinear");
  opencv_exact.report("INTER_LINEAR vs exact bilinear");
  CHECK(all.sum / all.count < 0.2);
  CHECK(ours_exact.sum / ours_exact.count < 0.01);
}

TEST_CASE("fractional regions match exact double-precision references", "[resize]") {
  const Image image = natural_image(500, 375, 3);
  std::vector<std::uint8_t> scratch;
  std::mt19937 rng(77);
  std::uniform_real_distribution<double> unit(0, 1);
  Diff down, up, linear;
  for (int i = 0; i < 150; ++i) {
    // A fractional region anywhere in the image, sometimes flush with its far edges.
    const double w = 1 + unit(rng) * 480, h = 1 + unit(rng) * 360;
    double x = unit(rng) * (image.width - w), y = unit(rng) * (image.height - h);
    if (i % 7 == 0) x = image.width - w;
    if (i % 5 == 0) y = image.height - h;
    // Shrinking on both axes (box filter), and growing on both (also exact coverage).
    const Region shrink{x,
                        y,
                        w,
                        h,
                        std::max(1, static_cast<int>(w / (1 + unit(rng) * 6))),
                        std::max(1, static_cast<int>(h / (1 + unit(rng) * 6)))};
    const Region grow{x,
                      y,
                      std::min(w, 60.0),
                      std::min(h, 60.0),
                      static_cast<int>(std::ceil(std::min(w, 60.0) * (1 + unit(rng) * 2))),
                      static_cast<int>(std::ceil(std::min(h, 60.0) * (1 + unit(rng) * 2)))};
    INFO(label(shrink) << " / " << label(grow));
    CHECK(down.add(ours(image, shrink, Interpolation::kArea, scratch),
                   round_half_up(reference_area(image, shrink)), label(shrink)) <= 1);
    CHECK(up.add(ours(image, grow, Interpolation::kArea, scratch),
                 round_half_up(reference_area(image, grow)), label(grow)) <= 1);
    CHECK(linear.add(ours(image, shrink, Interpolation::kLinear, scratch),
                     round_half_up(reference_linear(image, shrink)), label(shrink)) <= 1);
  }
  down.report("area, fractional, shrinking vs exact");
  up.report("area, fractional, growing vs exact");
  linear.report("linear, fractional vs exact");
  CHECK(down.sum / down.count < 0.02);
  CHECK(up.sum / up.count < 0.02);
  CHECK(linear.sum / linear.count < 0.02);
}

TEST_CASE("a fractional region over one source pixel's part averages by coverage", "[resize]") {
  // Two columns 0 and 200: [0.5, 1.5) covers half of each, so the mean is 100.
  Image image{2, 1, 6, {0, 0, 0, 200, 200, 200}};
  std::vector<std::uint8_t> scratch;
  const auto out = ours(image, {0.5, 0, 1, 1, 1, 1}, Interpolation::kArea, scratch);
  CHECK(out == std::vector<std::uint8_t>{100, 100, 100});
  // [0.25, 2) covers 3/4 of column 0 and all of column 1: (0.75*0 + 200) / 1.75 = 114.29.
  CHECK(ours(image, {0.25, 0, 1.75, 1, 1, 1}, Interpolation::kArea, scratch) ==
        std::vector<std::uint8_t>{114, 114, 114});
}

TEST_CASE("constant images stay constant", "[resize]") {
  const std::vector<Region> regions = {
      {0, 0, 500, 375, 224, 224},
      {10, 20, 300, 260, 160, 192},
      {0, 0, 500, 375, 1, 1},
      {3, 2, 7, 5, 224, 224},
      {0, 0, 1, 1, 9, 4},
      {0, 0, 500, 375, 3, 400},
      {0.3, 0.7, 499.6, 374.2, 5, 3},
      {100, 0, 70, 375, 300, 2},
      {12.5, 7.25, 41.1, 33.3, 97, 13},
  };
  std::vector<std::uint8_t> scratch;
  for (const std::uint8_t value : {0, 1, 127, 128, 254, 255}) {
    Image image{500, 375, 500 * 3, std::vector<std::uint8_t>(500 * 375 * 3)};
    for (std::size_t i = 0; i < image.pixels.size(); i += 3) {
      image.pixels[i] = value;
      image.pixels[i + 1] = static_cast<std::uint8_t>(255 - value);
      image.pixels[i + 2] = static_cast<std::uint8_t>(value / 2 + 60);
    }
    for (const Region& region : regions) {
      for (Interpolation interpolation : {Interpolation::kArea, Interpolation::kLinear}) {
        const auto out = ours(image, region, interpolation, scratch);
        bool constant = true;
        for (std::size_t i = 0; i < out.size(); i += 3) {
          constant = constant && out[i] == image.pixels[0] && out[i + 1] == image.pixels[1] &&
                     out[i + 2] == image.pixels[2];
        }
        INFO("value " << int(value) << " " << label(region));
        CHECK(constant);
      }
    }
  }
}

TEST_CASE("extreme ratios and padded strides stay within one of OpenCV", "[resize]") {
  // Shrinking by more than 64 taps per axis takes the exact 32-bit path.
  const Image wide = natural_image(1500, 700, 4, /*pad=*/5);
  std::vector<std::uint8_t> scratch;
  Diff diff;
  for (const Region& region : std::vector<Region>{{0, 0, 1500, 700, 3, 2},
                                                  {0, 0, 1500, 700, 1, 1},
                                                  {700, 300, 800, 400, 7, 5},
                                                  {1, 0, 1499, 700, 1499, 1},
                                                  {0, 0, 1500, 1, 20, 1},
                                                  {1499, 0, 1, 700, 1, 700},
                                                  {1400, 600, 100, 100, 1, 350}}) {
    INFO(label(region));
    CHECK(diff.add(ours(wide, region, Interpolation::kArea, scratch),
                   opencv(wide, region, cv::INTER_AREA), label(region)) <= 1);
    CHECK(diff.add(ours(wide, region, Interpolation::kLinear, scratch),
                   opencv(wide, region, cv::INTER_LINEAR), label(region)) <= 1);
  }
  diff.report("extreme ratios, padded stride");
}

TEST_CASE("high-contrast content stays within one of OpenCV", "[resize]") {
  // Random black/white pixels and a one-pixel checkerboard: the largest products and the least
  // forgiving rounding for the 16-bit arithmetic.
  Image image{320, 240, 320 * 3, std::vector<std::uint8_t>(320 * 240 * 3)};
  std::mt19937 rng(9);
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const bool white = x < 160 ? (rng() & 1) != 0 : ((x + y + c) & 1) != 0;
        image.pixels[y * image.stride + 3 * x + c] = white ? 255 : 0;
      }
    }
  }
  std::vector<std::uint8_t> scratch;
  Diff area, linear;
  for (const Region& region : std::vector<Region>{{0, 0, 320, 240, 224, 224},
                                                  {10, 5, 300, 230, 160, 120},
                                                  {0, 0, 320, 240, 107, 80},
                                                  {0, 0, 320, 240, 32, 24},
                                                  {100, 50, 99, 77, 224, 224},
                                                  {0, 0, 320, 240, 480, 100},
                                                  {3, 0, 317, 240, 5, 3}}) {
    INFO(label(region));
    CHECK(area.add(ours(image, region, Interpolation::kArea, scratch),
                   opencv(image, region, cv::INTER_AREA), label(region)) <= 1);
    CHECK(linear.add(ours(image, region, Interpolation::kLinear, scratch),
                     opencv(image, region, cv::INTER_LINEAR), label(region)) <= 1);
  }
  area.report("INTER_AREA vs ours, high contrast");
  linear.report("INTER_LINEAR vs ours, high contrast");
}

TEST_CASE("scratch is reused and results do not depend on its history", "[resize]") {
  const Image image = natural_image(500, 375, 5);
  std::vector<std::uint8_t> fresh, reused;
  const Region big{0, 0, 500, 375, 224, 224}, small{50, 60, 120, 90, 64, 48};
  const auto first = ours(image, small, Interpolation::kArea, fresh);
  ours(image, big, Interpolation::kArea, reused);
  const std::size_t capacity = reused.capacity();
  const std::uint8_t* data = reused.data();
  CHECK(ours(image, small, Interpolation::kArea, reused) == first);
  CHECK(ours(image, big, Interpolation::kArea, reused) ==
        ours(image, big, Interpolation::kArea, fresh));
  CHECK(reused.capacity() == capacity);
  CHECK(reused.data() == data);
}

TEST_CASE("bad resize arguments raise ConfigError", "[resize]") {
  const Image image = natural_image(40, 30, 6);
  std::vector<std::uint8_t> out(64 * 64 * 3), scratch;
  auto call = [&](ResizeSource source, int dw, int dh) {
    resize_rgb(source, out.data(), dw, dh, Interpolation::kArea, scratch);
  };
  const ResizeSource good{image.pixels.data(), 40, 30, 120, 0, 0, 40, 30};
  REQUIRE_NOTHROW(call(good, 8, 8));
  auto with = [&](auto change) {
    ResizeSource s = good;
    change(s);
    return s;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.w = 0; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.h = 0; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.w = -3; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([&](ResizeSource& s) { s.x = nan; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.x = -1; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.x = 1; }), 8, 8), ConfigError);  // x+w > 40
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.y = 0.5; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.x = 40, s.w = 1; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.pixels = nullptr; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.stride = 119; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(with([](ResizeSource& s) { s.width = 0; }), 8, 8), ConfigError);
  CHECK_THROWS_AS(call(good, 0, 8), ConfigError);
  CHECK_THROWS_AS(call(good, 8, 0), ConfigError);
  CHECK_THROWS_AS(call(good, -1, 8), ConfigError);
  CHECK_THROWS_AS(resize_rgb(good, nullptr, 8, 8, Interpolation::kArea, scratch), ConfigError);
  // A region that pokes out by less than the tolerance is clamped, not rejected.
  CHECK_NOTHROW(call(with([](ResizeSource& s) { s.x = 1e-9, s.w = 40; }), 8, 8));

  CHECK(parse_interpolation("area") == Interpolation::kArea);
  CHECK(parse_interpolation("linear") == Interpolation::kLinear);
  CHECK_THROWS_AS(parse_interpolation("cubic"), ConfigError);
  CHECK_THROWS_AS(parse_interpolation(""), ConfigError);
}

TEST_CASE("resize_rgb_scratch_bytes suffices for every region, same bytes as the vector",
          "[resize]") {
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> unit(0, 1);
  const int sources[][2] = {{500, 375}, {37, 900}, {1, 1}, {2, 700}, {4000, 3}};
  const int outputs[][2] = {{224, 224}, {1, 1}, {64, 48}, {600, 20}};
  for (const auto& size : sources) {
    const Image image = natural_image(size[0], size[1], 3);
    for (const auto& output : outputs) {
      const std::size_t bound = resize_rgb_scratch_bytes(size[0], size[1], output[0], output[1]);
      std::vector<std::uint8_t> scratch(bound + 1);
      for (int trial = 0; trial < 40; ++trial) {
        // Whole images, thin slivers and fractional windows; an odd offset into the scratch.
        const double w = trial == 0 ? size[0] : std::max(1e-3, unit(rng) * size[0]);
        const double h = trial == 0 ? size[1] : std::max(1e-3, unit(rng) * size[1]);
        const Region region{
            unit(rng) * (size[0] - w), unit(rng) * (size[1] - h), w, h, output[0], output[1]};
        for (const Interpolation filter : {Interpolation::kArea, Interpolation::kLinear}) {
          std::vector<std::uint8_t> grown;
          const auto expected = ours(image, region, filter, grown);
          REQUIRE(grown.size() <= bound);
          std::vector<std::uint8_t> out(expected.size());
          const ResizeSource source{image.pixels.data(),
                                    image.width,
                                    image.height,
                                    image.stride,
                                    region.x,
                                    region.y,
                                    region.w,
                                    region.h};
          resize_rgb(source, out.data(), output[0], output[1], filter,
                     std::span<std::uint8_t>(scratch).subspan(1, bound));
          CHECK(out == expected);
        }
      }
    }
  }
  const Image image = natural_image(40, 30, 6);
  std::vector<std::uint8_t> out(8 * 8 * 3), small(16);
  CHECK_THROWS_AS(resize_rgb({image.pixels.data(), 40, 30, 120, 0, 0, 40, 30}, out.data(), 8, 8,
                             Interpolation::kArea, std::span<std::uint8_t>(small)),
                  ConfigError);
}
