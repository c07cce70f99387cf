// Boxes that follow their image: a ragged output with `follows` moves its boxes through the
// keyed crop, flip and translate of an image output, and a labels output keeps the rows its
// boxes kept. The boxes land where the image's pixels did; a pairing that cannot work is one
// clear error. (tests/python/test_ragged.py checks the boxes against torchvision's v2.)
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "epoch_bytes.hpp"
#include "fails_for.hpp"
#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::TempDir;

namespace {

constexpr int kOut = 48;

struct Scene {
  RgbImage image;
  std::array<float, 4> box;  // xyxy, whole pixels: the white rectangle
};

// Sample i: a black image of varied size with one white rectangle, the rectangle as its box.
Scene scene(std::uint64_t i) {
  const int width = 50 + static_cast<int>(i * 37 % 70), height = 40 + static_cast<int>(i * 53 % 80);
  Scene s{{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3, 0)}, {}};
  const int x1 = static_cast<int>(i * 11 % (width - 12)),
            y1 = static_cast<int>(i * 7 % (height - 12));
  const int x2 = x1 + 10 + static_cast<int>(i % (width - x1 - 10)),
            y2 = y1 + 10 + static_cast<int>(i * 3 % (height - y1 - 10));
  for (int y = y1; y < y2; ++y) {
    std::memset(&s.image.pixels[(std::size_t(y) * width + x1) * 3], 255, std::size_t(x2 - x1) * 3);
  }
  s.box = {float(x1), float(y1), float(x2), float(y2)};
  return s;
}

NdArray rows_of(const DType& dtype, std::vector<std::uint64_t> shape, const void* data) {
  std::uint64_t bytes = dtype.itemsize;
  for (const std::uint64_t extent : shape) bytes *= extent;
  const auto* first = static_cast<const std::uint8_t*>(data);
  return {dtype, std::move(shape), std::vector<std::uint8_t>(first, first + bytes)};
}

// image (raw), boxes (one <f4 [4] row), labels (<i8, `label_rows(i)` rows of 7), index.
std::string scenes_file(
    const TempDir& dir, std::uint64_t count,
    const std::function<std::uint64_t(std::uint64_t)>& label_rows = [](std::uint64_t) {
      return 1;
    }) {
  const std::string path = dir.file("scenes.beton");
  RgbImageOptions raw;
  raw.write_mode = ImageWriteMode::kRaw;
  DatasetWriter(path,
                {{"image", std::make_shared<RgbImageField>(raw)},
                 {"boxes", std::make_shared<RaggedNdArrayField>(DType::parse("<f4"),
                                                                std::vector<std::uint64_t>{4})},
                 {"labels", std::make_shared<RaggedNdArrayField>(DType::parse("<i8"),
                                                                 std::vector<std::uint64_t>{})},
                 {"index", std::make_shared<IntField>()}},
                {.num_workers = 2})
      .write(test::FunctionSource(count, [&](std::uint64_t i) {
        const Scene s = scene(i);
        const std::vector<std::int64_t> labels(label_rows(i), 7);
        return std::vector<FieldValue>{s.image, rows_of(DType::parse("<f4"), {1, 4}, s.box.data()),
                                       rows_of(DType::parse("<i8"), {labels.size()}, labels.data()),
                                       static_cast<std::int64_t>(i)};
      }));
  return path;
}

std::shared_ptr<Decoder> decoder(const std::string& name,
                                 std::map<std::string, ParamValue> params) {
  return OpRegistry::global().make_decoder(name, OpParams(std::move(params)));
}

std::shared_ptr<Operation> operation(const std::string& name,
                                     std::map<std::string, ParamValue> params) {
  return OpRegistry::global().make_operation(name, OpParams(std::move(params)));
}

std::vector<PipelineSpec> following_pipelines(const std::string& layout) {
  return {{"image",
           "image",
           decoder("random_resized_crop",
                   {{"size", std::int64_t{kOut}}, {"scale", std::vector<double>{0.25, 1.0}}}),
           {operation("random_horizontal_flip", {{"probability", 0.5}})}},
          {"boxes",
           "boxes",
           decoder("ragged", {{"layout", layout}, {"follows", "image"}, {"rows", "boxes_xyxy"}}),
           {}},
          {"labels", "labels", decoder("ragged", {{"layout", layout}, {"follows", "boxes"}}), {}}};
}

LoaderOptions options(int workers = 2) {
  LoaderOptions o;
  o.batch_size = 8;
  o.num_workers = workers;
  o.drop_last = false;
  o.order.kind = OrderKind::kRandom;
  o.order.seed = 12;
  return o;
}

// The box of the white pixels (value > 127) of sample k of `images`, in pixel edges, or nullopt.
std::optional<std::array<int, 4>> bright_box(const BatchTensor& images, std::uint64_t k) {
  std::optional<std::array<int, 4>> box;
  const std::uint8_t* image = images.data + k * kOut * kOut * 3;
  for (int y = 0; y < kOut; ++y) {
    for (int x = 0; x < kOut; ++x) {
      if (image[(y * kOut + x) * 3] <= 127) continue;
      if (!box) box = std::array<int, 4>{x, y, x + 1, y + 1};
      (*box)[0] = std::min((*box)[0], x);
      (*box)[1] = std::min((*box)[1], y);
      (*box)[2] = std::max((*box)[2], x + 1);
      (*box)[3] = std::max((*box)[3], y + 1);
    }
  }
  return box;
}

}  // namespace

TEST_CASE("boxes land where their image's pixels went, labels in step", "[ragged][follow]") {
  TempDir dir;
  const std::string path = scenes_file(dir, 60);
  for (const char* layout : {"packed", "padded"}) {
    INFO("layout " << layout);
    LoaderOptions o = options();
    o.on_error = OnSampleError::kSkip;  // with samples left out: the rows settle in step
    o.max_skipped_fraction = 0.5;
    std::vector<PipelineSpec> pipelines = following_pipelines(layout);
    pipelines.push_back({"index",
                         "index",
                         nullptr,
                         {std::make_shared<test::FailsFor>(std::set<std::uint64_t>{4, 9, 31})}});
    Loader loader(path, pipelines, o);
    std::uint64_t kept = 0, dropped = 0, seen = 0;
    auto epoch = loader.epoch(0);
    while (auto batch = epoch.next()) {
      const BatchTensor images = batch->output("image"), boxes = batch->output("boxes"),
                        labels = batch->output("labels");
      for (std::uint64_t k = 0; k < batch->size(); ++k) {
        const bool packed = boxes.offsets != nullptr;
        const std::int64_t n = packed ? boxes.offsets[k + 1] - boxes.offsets[k] : boxes.lengths[k];
        const std::int64_t m =
            packed ? labels.offsets[k + 1] - labels.offsets[k] : labels.lengths[k];
        REQUIRE(n == m);  // a label for each kept box, none for a dropped one
        REQUIRE(n <= 1);
        ++seen;
        const std::optional<std::array<int, 4>> bright = bright_box(images, k);
        if (n == 0) {
          ++dropped;
          continue;
        }
        ++kept;
        const float* box = reinterpret_cast<const float*>(boxes.data) +
                           4 * (packed ? boxes.offsets[k] : std::int64_t(k) * boxes.rows);
        const std::int64_t* label = reinterpret_cast<const std::int64_t*>(labels.data) +
                                    (packed ? labels.offsets[k] : std::int64_t(k) * labels.rows);
        CHECK(*label == 7);
        REQUIRE(bright);
        // The resize blurs the rectangle's edges by less than a pixel.
        for (int c = 0; c < 4; ++c) CHECK(std::abs(box[c] - (*bright)[c]) <= 1.0);
      }
    }
    CHECK(seen == 57);
    CHECK(kept > 40);
    CHECK(dropped + kept == seen);
  }
}

TEST_CASE("following boxes are the same bytes for any number of workers", "[ragged][follow]") {
  TempDir dir;
  const std::string path = scenes_file(dir, 40);
  for (const char* layout : {"packed", "padded"}) {
    Loader one(path, following_pipelines(layout), options(1));
    Loader three(path, following_pipelines(layout), options(3));
    CHECK(test::epoch_bytes(one, 3) == test::epoch_bytes(three, 3));
  }
}

TEST_CASE("Loader::sample_geometry gives the maps the boxes followed", "[ragged][follow]") {
  TempDir dir;
  const std::string path = scenes_file(dir, 10);
  Loader loader(path, following_pipelines("packed"), options());
  const std::vector<PlaneMap> maps = loader.sample_geometry("image", 2, 5);
  REQUIRE(maps.size() == 2);  // the crop and its resize, then the flip (mirroring or not)
  CHECK(maps[0].width == kOut);
  CHECK(maps[0].scale_x > 0);
  CHECK((maps[1].scale_x == 1 || maps[1].scale_x == -1));
  CHECK_THROWS_WITH(loader.sample_geometry("boxes", 0, 0), Catch::Contains("ragged"));
  CHECK_THROWS_WITH(loader.sample_geometry("image", 0, 10), Catch::Contains("past"));
  CHECK_THROWS_WITH(loader.sample_geometry("nothing", 0, 0), Catch::Contains("no output"));
}

TEST_CASE("pairings that cannot work are one clear error", "[ragged][follow][errors]") {
  TempDir dir;
  const std::string path = scenes_file(dir, 12, [](std::uint64_t i) { return i == 3 ? 2 : 1; });
  const auto image = [](std::vector<std::shared_ptr<Operation>> operations) {
    return PipelineSpec{"image", "image", decoder("center_crop", {{"size", std::int64_t{kOut}}}),
                        std::move(operations)};
  };
  const auto boxes = [](const std::string& follows, const std::string& rows) {
    return PipelineSpec{
        "boxes", "boxes", decoder("ragged", {{"follows", follows}, {"rows", rows}}), {}};
  };
  const auto refused = [&](std::vector<PipelineSpec> pipelines) {
    try {
      Loader loader(path, std::move(pipelines), options());
      test::epoch_bytes(loader, 0);
      return std::string();
    } catch (const std::exception& error) {
      return std::string(error.what());
    }
  };
  CHECK_THAT(refused({image({}), boxes("picture", "boxes_xyxy")}),
             Catch::Contains("follows 'picture', which is no output"));
  CHECK_THAT(refused({image({}), boxes("image", "values")}),
             Catch::Contains("its rows are values"));
  CHECK_THAT(refused({image({std::make_shared<test::FailsFor>(std::set<std::uint64_t>{})}),
                      boxes("image", "boxes_xyxy")}),
             Catch::Contains("step 'fails_for' does not say where it moves pixels"));
  CHECK_THAT(refused({image({}),
                      {"labels",
                       "labels",
                       decoder("ragged", {{"follows", "image"}, {"rows", "boxes_xyxy"}}),
                       {}}}),
             Catch::Contains("boxes are rows of <f4 [4]"));
  CHECK_THROWS_WITH(decoder("ragged", {{"rows", "boxes_xywh"}}),
                    Catch::Contains("only when `follows`"));
  CHECK_THAT(refused({image({}),
                      boxes("image", "boxes_xyxy"),
                      {"labels", "labels", decoder("ragged", {{"follows", "image"}}), {}}}),
             Catch::Contains("output 'labels'") && Catch::Contains("its rows are values"));
  // Sample 3 has two labels for its one box: the epoch fails naming both.
  CHECK_THAT(refused({image({}),
                      boxes("image", "boxes_xyxy"),
                      {"labels", "labels", decoder("ragged", {{"follows", "boxes"}}), {}}}),
             Catch::Contains("sample 3, output 'labels'") && Catch::Contains("has 2 rows") &&
                 Catch::Contains("'boxes'"));
}

TEST_CASE("boxes follow the GPU path's records as they follow the CPU path's images",
          "[ragged][follow]") {
  // random_resized_crop_encoded chooses the window and the flip with the draws that
  // random_resized_crop and random_horizontal_flip make, so boxes move the same way.
  TempDir dir;
  const std::string path = scenes_file(dir, 40);
  std::vector<PipelineSpec> cpu = following_pipelines("packed");
  std::vector<PipelineSpec> gpu = following_pipelines("packed");
  gpu[0] = {"image",
            "image",
            decoder("random_resized_crop_encoded", {{"size", std::int64_t{kOut}},
                                                    {"scale", std::vector<double>{0.25, 1.0}},
                                                    {"flip", 0.5}}),
            {}};
  Loader cpu_loader(path, cpu, options());
  Loader gpu_loader(path, gpu, options());
  for (const std::uint64_t index : {0, 7, 23}) {
    const std::vector<PlaneMap> a = cpu_loader.sample_geometry("image", 1, index);
    const std::vector<PlaneMap> b = gpu_loader.sample_geometry("image", 1, index);
    // The CPU path maps an unmirrored sample through an identity flip; the GPU path adds none.
    const bool mirrored = a[1].scale_x < 0;
    REQUIRE(b.size() == (mirrored ? 2u : 1u));
    CHECK(b[0].scale_x == a[0].scale_x);
    CHECK(b[0].shift_y == a[0].shift_y);
    if (mirrored) CHECK(b[1].shift_x == a[1].shift_x);
  }
  auto cpu_epoch = cpu_loader.epoch(1);
  auto gpu_epoch = gpu_loader.epoch(1);
  while (auto a = cpu_epoch.next()) {
    auto b = gpu_epoch.next();
    REQUIRE(b);
    for (const char* output : {"boxes", "labels"}) {
      const BatchTensor x = a->output(output), y = b->output(output);
      REQUIRE(x.byte_size() == y.byte_size());
      CHECK(std::memcmp(x.data, y.data, x.byte_size()) == 0);
      CHECK(std::memcmp(x.offsets, y.offsets, (x.count + 1) * 8) == 0);
    }
  }
}

TEST_CASE("boxes that are inverted or not finite are dropped, not mended", "[ragged][follow]") {
  TempDir dir;
  const std::string path = dir.file("odd.beton");
  RgbImageOptions raw;
  raw.write_mode = ImageWriteMode::kRaw;
  const float inf = std::numeric_limits<float>::infinity();
  // One valid box between inverted, infinite and NaN ones, as a damaged annotation file gives.
  const std::vector<float> boxes = {10, 10, 2,  2,    inf, 1, 5,   5, 4, 4,  30, 20,
                                    1,  1,  40, -inf, 3,   3, NAN, 9, 8, 30, 6,  31};
  DatasetWriter(path,
                {{"image", std::make_shared<RgbImageField>(raw)},
                 {"boxes", std::make_shared<RaggedNdArrayField>(DType::parse("<f4"),
                                                                std::vector<std::uint64_t>{4})}},
                {.num_workers = 1})
      .write(test::FunctionSource(1, [&](std::uint64_t) {
        return std::vector<FieldValue>{
            RgbImage{64, 48, std::vector<std::uint8_t>(64 * 48 * 3, 90)},
            rows_of(DType::parse("<f4"), {boxes.size() / 4, 4}, boxes.data())};
      }));
  for (const char* rows : {"boxes_xyxy", "boxes_xywh"}) {
    INFO("rows " << rows);
    // The identity crop: only the sifting acts.
    Loader loader(path,
                  {{"image",
                    "image",
                    decoder("center_crop", {{"size", std::int64_t{64}}, {"ratio", 1.0}}),
                    {}},
                   {"boxes",
                    "boxes",
                    decoder("ragged", {{"layout", "packed"}, {"follows", "image"}, {"rows", rows}}),
                    {}}},
                  options(1));
    auto epoch = loader.epoch(0);
    const auto batch = epoch.next();
    REQUIRE(batch);
    const BatchTensor kept = batch->output("boxes");
    const float* box = reinterpret_cast<const float*>(kept.data);
    const std::int64_t n = kept.offsets[1] - kept.offsets[0];
    // xyxy: only [4, 4, 30, 20] is a box. xywh: [4, 4, 30, 20] and [8, 30, 6, 31] (clipped to
    // the canvas), and [10, 10, 2, 2]; the others have a negative or non-finite side.
    for (std::int64_t k = 0; k < n; ++k) {
      for (int c = 0; c < 4; ++c) CHECK(std::isfinite(box[4 * k + c]));
      CHECK(box[4 * k + 2] >= (std::string(rows) == "boxes_xyxy" ? box[4 * k] : 0.0f));
    }
    CHECK(n == (std::string(rows) == "boxes_xyxy" ? 1 : 3));
  }
}
