// Crop windows (ffcv/crop.hpp): exact cases from FFCV's formulas, and the distribution of
// random_resized_crop against torchvision's RandomResizedCrop.get_params.
//
// The torchvision side is tests/reference/crop_stats.json, written by
// tests/reference/make_crop_stats.py (see there to regenerate). For each configuration it holds
// summary statistics over 200,000 torchvision draws with their standard errors; this test draws
// the same number of windows from Philox and requires every statistic to agree within 5 standard
// errors of the difference. The file also lists torchvision's fallback windows for a set of
// sizes, which must match exactly. Set FFCV_CROP_TEST_VERBOSE=1 to print the comparison table.
//
// The JSON is read with the small parser below: objects, arrays, numbers and strings without
// escapes are all the golden file uses.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ffcv/crop.hpp"
#include "ffcv/util/counter_random.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;

namespace {

constexpr std::array<double, 2> kDefaultScale{0.08, 1.0};
constexpr std::array<double, 2> kDefaultRatio{3.0 / 4.0, 4.0 / 3.0};
constexpr std::array<double, 2> kImpossibleScale{1e6, 1e6};  // forces the fallback

// --- a minimal JSON reader for tests/reference/crop_stats.json ---

struct Json {
  enum class Kind { kNull, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> members;

  const Json& operator[](const std::string& key) const {
    const auto found = members.find(key);
    if (kind != Kind::kObject || found == members.end()) {
      throw std::runtime_error("crop_stats.json: missing key '" + key + "'");
    }
    return found->second;
  }
  const Json& operator[](std::size_t index) const { return items.at(index); }
  double num() const {
    if (kind != Kind::kNumber) throw std::runtime_error("crop_stats.json: expected a number");
    return number;
  }
  int integer() const { return static_cast<int>(num()); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  Json parse() {
    Json value = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("crop_stats.json: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  std::string parse_string() {
    expect('"');
    const std::size_t end = text_.find('"', pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string value = text_.substr(pos_, end - pos_);
    if (value.find('\\') != std::string::npos) fail("escapes are not supported");
    pos_ = end + 1;
    return value;
  }
  Json parse_value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    Json value;
    const char c = text_[pos_];
    if (c == '{') {
      value.kind = Json::Kind::kObject;
      ++pos_;
      if (take('}')) return value;
      do {
        std::string key = parse_string();
        expect(':');
        value.members[key] = parse_value();
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      value.kind = Json::Kind::kArray;
      ++pos_;
      if (take(']')) return value;
      do {
        value.items.push_back(parse_value());
      } while (take(','));
      expect(']');
    } else if (c == '"') {
      value.kind = Json::Kind::kString;
      value.text = parse_string();
    } else if (text_.compare(pos_, 4, "null") == 0) {
      pos_ += 4;
    } else {
      const char* begin = text_.c_str() + pos_;
      char* end = nullptr;
      value.kind = Json::Kind::kNumber;
      value.number = std::strtod(begin, &end);
      if (end == begin) fail("unexpected character");
      pos_ += static_cast<std::size_t>(end - begin);
    }
    return value;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

std::string golden_path() {
  if (const char* path = std::getenv("FFCV_CROP_STATS")) return path;
#ifdef FFCV_SOURCE_DIR
  return std::string(FFCV_SOURCE_DIR) + "/tests/reference/crop_stats.json";
#else
  return "tests/reference/crop_stats.json";  // relative to the repository root
#endif
}

Json load_golden() {
  const std::string path = golden_path();
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + " (set FFCV_CROP_STATS)");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return JsonParser(text).parse();
}

// --- statistics, computed exactly as make_crop_stats.py does ---

struct Estimate {
  double value = 0;
  double se = 0;
};

Estimate mean_of(const std::vector<double>& values) {
  if (values.empty()) return {};
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / values.size();
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / values.size()) / std::sqrt(double(values.size()))};
}

// Population standard deviation with its delta-method standard error.
Estimate std_of(const std::vector<double>& values) {
  const double mean = mean_of(values).value;
  double m2 = 0, m4 = 0;
  for (double v : values) {
    const double d2 = (v - mean) * (v - mean);
    m2 += d2;
    m4 += d2 * d2;
  }
  m2 /= values.size();
  m4 /= values.size();
  const double std = std::sqrt(m2);
  if (std == 0) return {};
  return {std, std::sqrt(std::max(m4 - m2 * m2, 0.0) / values.size()) / (2 * std)};
}

bool inside(const CropWindow& w, int height, int width) {
  return w.height > 0 && w.width > 0 && w.top >= 0 && w.left >= 0 && w.top + w.height <= height &&
         w.left + w.width <= width;
}

// A Philox-backed draw function for sample `index`.
auto philox_draws(std::uint64_t seed, std::uint32_t stream, std::uint64_t index) {
  return [=](std::uint32_t n) { return uniform01(seed, stream, index, n); };
}

}  // namespace

TEST_CASE("random_resized_crop matches torchvision's statistics", "[crop]") {
  const Json golden = load_golden();
  const bool verbose = std::getenv("FFCV_CROP_TEST_VERBOSE") != nullptr;
  if (verbose) {
    std::printf("torchvision %s, torch %s; |ours - tv| / SE of the difference:\n",
                golden["torchvision"].text.c_str(), golden["torch"].text.c_str());
  }
  const Json& configs = golden["configs"];
  REQUIRE(configs.items.size() >= 6);
  for (std::size_t c = 0; c < configs.items.size(); ++c) {
    const Json& config = configs[c];
    const int height = config["height"].integer();
    const int width = config["width"].integer();
    const std::array<double, 2> scale{config["scale"][0].num(), config["scale"][1].num()};
    const std::array<double, 2> ratio{config["ratio"][0].num(), config["ratio"][1].num()};
    const int draws = config["draws"].integer();
    const CropWindow fallback{
        config["fallback_window"][0].integer(), config["fallback_window"][1].integer(),
        config["fallback_window"][2].integer(), config["fallback_window"][3].integer()};
    INFO("config " << config["name"].text);

    std::vector<double> area_frac, log_aspect, top_frac, left_frac;
    area_frac.reserve(draws);
    log_aspect.reserve(draws);
    int fallbacks = 0;
    const double area = static_cast<double>(height) * width;
    for (int i = 0; i < draws; ++i) {
      const CropWindow w = random_resized_crop(
          height, width, scale, ratio,
          philox_draws(20240601, 0x63726f70 + static_cast<std::uint32_t>(c), i));
      area_frac.push_back(static_cast<double>(w.height) * w.width / area);
      log_aspect.push_back(std::log(static_cast<double>(w.width) / w.height));
      if (w.height < height) top_frac.push_back(static_cast<double>(w.top) / (height - w.height));
      if (w.width < width) left_frac.push_back(static_cast<double>(w.left) / (width - w.width));
      if (w == fallback) ++fallbacks;
    }

    // Fallback rate: binomial standard error of the difference, from the pooled rate.
    const double tv_rate = config["fallback_rate"].num();
    const double our_rate = static_cast<double>(fallbacks) / draws;
    const double pooled = (tv_rate * draws + fallbacks) / (2.0 * draws);
    const double rate_se = std::sqrt(pooled * (1 - pooled) * 2.0 / draws);

    struct Row {
      const char* name;
      Estimate ours;
      Estimate theirs;
    };
    const auto tv = [&](const std::string& key) {
      return Estimate{config[key].num(), config[key + "_se"].num()};
    };
    const std::vector<Row> rows = {
        {"area_frac_mean", mean_of(area_frac), tv("area_frac_mean")},
        {"area_frac_std", std_of(area_frac), tv("area_frac_std")},
        {"log_aspect_mean", mean_of(log_aspect), tv("log_aspect_mean")},
        {"log_aspect_std", std_of(log_aspect), tv("log_aspect_std")},
        {"top_frac_mean", mean_of(top_frac), tv("top_frac_mean")},
        {"left_frac_mean", mean_of(left_frac), tv("left_frac_mean")},
        {"fallback_rate",
         {our_rate, rate_se / std::sqrt(2.0)},
         {tv_rate, rate_se / std::sqrt(2.0)}},
    };
    if (verbose) std::printf("  %s (%d draws)\n", config["name"].text.c_str(), draws);
    for (const Row& row : rows) {
      const double se = std::sqrt(row.ours.se * row.ours.se + row.theirs.se * row.theirs.se);
      const double difference = std::abs(row.ours.value - row.theirs.value);
      if (verbose) {
        std::printf("    %-16s ours %.6f  tv %.6f  diff %.2e  z %.2f\n", row.name, row.ours.value,
                    row.theirs.value, difference, se > 0 ? difference / se : 0.0);
      }
      INFO(row.name << ": ours " << row.ours.value << ", torchvision " << row.theirs.value
                    << ", SE of the difference " << se);
      CHECK(difference <= 5 * se + 1e-12);
    }
  }
}

TEST_CASE("random_resized_crop falls back to exactly torchvision's windows", "[crop]") {
  const Json golden = load_golden();
  const Json& cases = golden["fallback_cases"];
  REQUIRE(cases.items.size() >= 10);
  for (const Json& row : cases.items) {
    const int height = row[0].integer(), width = row[1].integer();
    const std::array<double, 2> ratio{row[2].num(), row[3].num()};
    const CropWindow expected{row[4].integer(), row[5].integer(), row[6].integer(),
                              row[7].integer()};
    const CropWindow got =
        random_resized_crop(height, width, kImpossibleScale, ratio, philox_draws(1, 2, 3));
    INFO(height << "x" << width << " ratio (" << ratio[0] << ", " << ratio[1] << "): got "
                << got.top << "," << got.left << "," << got.height << "," << got.width);
    CHECK(got == expected);
  }
}

TEST_CASE("random_resized_crop fallback follows FFCV's formula", "[crop]") {
  const auto draws = philox_draws(5, 6, 7);
  // Wider than 4/3: full height, w = round(100 * 4/3) = 133, centred.
  CHECK(random_resized_crop(100, 1000, kImpossibleScale, kDefaultRatio, draws) ==
        CropWindow{0, 433, 100, 133});
  // Taller than 3/4: full width, h = round(100 / 0.75) = 133.
  CHECK(random_resized_crop(1000, 100, kImpossibleScale, kDefaultRatio, draws) ==
        CropWindow{433, 0, 133, 100});
  // Within the range: the whole image.
  CHECK(random_resized_crop(375, 500, kImpossibleScale, kDefaultRatio, draws) ==
        CropWindow{0, 0, 375, 500});
  // Halves round to even: 5 / 2 = 2.5 -> 2, 7 / 2 = 3.5 -> 4, 5 * 0.5 = 2.5 -> 2.
  CHECK(random_resized_crop(100, 5, kImpossibleScale, {2.0, 4.0}, draws) ==
        CropWindow{49, 0, 2, 5});
  CHECK(random_resized_crop(100, 7, kImpossibleScale, {2.0, 4.0}, draws) ==
        CropWindow{48, 0, 4, 7});
  CHECK(random_resized_crop(5, 100, kImpossibleScale, {0.25, 0.5}, draws) ==
        CropWindow{0, 49, 5, 2});
  // Degenerate: FFCV's formula gives round(1 / 4) = 0 rows; we keep one.
  CHECK(random_resized_crop(100, 1, kImpossibleScale, {4.0, 8.0}, draws) ==
        CropWindow{49, 0, 1, 1});
  CHECK(random_resized_crop(1, 100, kImpossibleScale, {0.1, 0.2}, draws) ==
        CropWindow{0, 49, 1, 1});
}

TEST_CASE("random_resized_crop arithmetic: sizes, rounding and positions", "[crop]") {
  // All draws 0.5: area fraction 0.54, aspect 1, side round(sqrt(0.54 * 375 * 500)) = 318;
  // top = int(0.5 * 58) = 29, left = int(0.5 * 183) = 91.
  const auto half = [](std::uint32_t) { return 0.5; };
  CHECK(random_resized_crop(375, 500, kDefaultScale, kDefaultRatio, half) ==
        CropWindow{29, 91, 318, 318});
  // Exact halves round to even: sqrt(16 * 25/64) = 2.5 -> 2, sqrt(16 * 49/64) = 3.5 -> 4.
  const auto zero = [](std::uint32_t) { return 0.0; };
  CHECK(random_resized_crop(4, 4, {25.0 / 64, 25.0 / 64}, {1, 1}, zero) == CropWindow{0, 0, 2, 2});
  CHECK(random_resized_crop(4, 4, {49.0 / 64, 49.0 / 64}, {1, 1}, zero) == CropWindow{0, 0, 4, 4});
  // The largest draw still lands inside: top <= H - h.
  const double almost_one = std::nextafter(1.0, 0.0);
  const auto high = [&](std::uint32_t n) { return n % 4 >= 2 ? almost_one : 0.0; };
  CHECK(random_resized_crop(1000, 1000, {0.25, 0.25}, {1, 1}, high) ==
        CropWindow{500, 500, 500, 500});
}

TEST_CASE("random_resized_crop numbers its draws 4k..4k+3 for attempt k", "[crop]") {
  std::vector<std::uint32_t> asked;
  // Attempt 0: area fraction ~1 and aspect ~4/3 on a square image: w = 115 > 100, rejected.
  // Attempt 1: draws 0.5, accepted, placed by draws 6 and 7.
  const auto scripted = [&](std::uint32_t n) {
    asked.push_back(n);
    return n < 4 ? std::nextafter(1.0, 0.0) : 0.5;
  };
  const CropWindow window = random_resized_crop(100, 100, kDefaultScale, kDefaultRatio, scripted);
  CHECK(asked == std::vector<std::uint32_t>{0, 1, 4, 5, 6, 7});
  CHECK(window.height == 73);  // round(sqrt(0.54 * 10000)) with aspect 1 (+- one ulp)
  CHECK(window.width == 73);
  CHECK(window.top == 14);  // int(0.5 * 28)
  CHECK(window.left == 14);

  // A forced fallback asks for the two size draws of every attempt and nothing else.
  asked.clear();
  random_resized_crop(100, 1000, kImpossibleScale, kDefaultRatio, scripted);
  std::vector<std::uint32_t> expected;
  for (std::uint32_t k = 0; k < kRandomCropTries; ++k) {
    expected.push_back(4 * k);
    expected.push_back(4 * k + 1);
  }
  CHECK(asked == expected);
  for (std::uint32_t n : asked) CHECK(n < kRandomCropDraws);
}

TEST_CASE("random_resized_crop windows lie inside the image and are deterministic", "[crop]") {
  const std::vector<std::pair<std::array<double, 2>, std::array<double, 2>>> params = {
      {kDefaultScale, kDefaultRatio}, {{0.35, 1.0}, {1.0, 1.0}},  {{0.0, 1.0}, {0.1, 10.0}},
      {{0.5, 3.0}, {0.5, 2.0}},       {{0.01, 0.02}, {3.0, 5.0}}, {{1.0, 1.0}, {0.2, 0.3}},
  };
  int checked = 0;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const int height = 1 + static_cast<int>(uniform01(11, 1, i, 0) * 700);
    const int width = 1 + static_cast<int>(uniform01(11, 1, i, 1) * 700);
    const auto& [scale, ratio] = params[i % params.size()];
    const CropWindow w = random_resized_crop(height, width, scale, ratio, philox_draws(3, 4, i));
    INFO(height << "x" << width << " -> " << w.top << "," << w.left << "," << w.height << ","
                << w.width);
    REQUIRE(inside(w, height, width));
    REQUIRE(random_resized_crop(height, width, scale, ratio, philox_draws(3, 4, i)) == w);
    ++checked;
  }
  CHECK(checked == 20000);
  // Different draws give different windows (almost always).
  int differing = 0;
  for (std::uint64_t i = 0; i < 100; ++i) {
    differing +=
        random_resized_crop(375, 500, kDefaultScale, kDefaultRatio, philox_draws(1, 0, i)) !=
        random_resized_crop(375, 500, kDefaultScale, kDefaultRatio, philox_draws(2, 0, i));
  }
  CHECK(differing >= 95);
}

TEST_CASE("random_resized_crop rejects bad parameters", "[crop]") {
  const auto draws = philox_draws(1, 1, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(random_resized_crop(10, 10, {0.5, 0.4}, kDefaultRatio, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, 10, {-0.1, 0.4}, kDefaultRatio, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, 10, {0.0, 0.0}, kDefaultRatio, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, 10, {nan, 1.0}, kDefaultRatio, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, 10, kDefaultScale, {4.0 / 3, 3.0 / 4}, draws),
                  ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, 10, kDefaultScale, {0.0, 1.0}, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, 10, kDefaultScale, {1.0, INFINITY}, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(0, 10, kDefaultScale, kDefaultRatio, draws), ConfigError);
  CHECK_THROWS_AS(random_resized_crop(10, -1, kDefaultScale, kDefaultRatio, draws), ConfigError);
  CHECK_THROWS_AS(validate_random_crop_params({0.5, 0.4}, kDefaultRatio, "rrc"), ConfigError);
  // torchvision allows a maximum scale above 1, and an empty minimum.
  CHECK_NOTHROW(random_resized_crop(10, 10, {0.08, 2.0}, kDefaultRatio, draws));
  CHECK_NOTHROW(random_resized_crop(10, 10, {0.0, 1.0}, {1.0, 1.0}, draws));
}

TEST_CASE("center_crop is FFCV's truncated centred square", "[crop]") {
  // int(0.875 * 375) = 328; offsets (375 - 328) // 2 = 23 and (500 - 328) // 2 = 86.
  CHECK(center_crop(375, 500, 224.0 / 256) == CropWindow{23, 86, 328, 328});
  CHECK(center_crop(500, 375, 224.0 / 256) == CropWindow{86, 23, 328, 328});
  CHECK(center_crop(256, 256, 224.0 / 256) == CropWindow{16, 16, 224, 224});
  CHECK(center_crop(224, 224, 1.0) == CropWindow{0, 0, 224, 224});
  // Truncation, not rounding: 0.9 * 375 = 337.5 -> 337.
  CHECK(center_crop(375, 500, 0.9) == CropWindow{19, 81, 337, 337});
  // 0.999 * 999 = 998.001 -> 998; odd remainders round the offset down.
  CHECK(center_crop(999, 1200, 0.999) == CropWindow{0, 101, 998, 998});
  // Degenerate: FFCV's int(0.05 * 10) = 0; we keep one pixel.
  CHECK(center_crop(10, 10, 0.05) == CropWindow{4, 4, 1, 1});
  for (int height = 1; height <= 64; ++height) {
    for (int width = 1; width <= 64; ++width) {
      REQUIRE(inside(center_crop(height, width, 224.0 / 256), height, width));
    }
  }
}

TEST_CASE("center_crop rejects ratios outside 0 < r <= 1 and empty images", "[crop]") {
  CHECK_THROWS_AS(center_crop(375, 500, 1.0001), ConfigError);
  CHECK_THROWS_AS(center_crop(375, 500, 0.0), ConfigError);
  CHECK_THROWS_AS(center_crop(375, 500, -0.5), ConfigError);
  CHECK_THROWS_AS(center_crop(375, 500, std::numeric_limits<double>::quiet_NaN()), ConfigError);
  CHECK_THROWS_AS(center_crop(0, 500, 0.875), ConfigError);
  CHECK_THROWS_AS(center_crop(375, -2, 0.875), ConfigError);
}
