// The CPU half of the GPU image path (ffcv/image/encoded_crop.hpp): records carry the windows and
// flips of the CPU path's keyed draws, the JPEG's own bytes, and raw samples finished exactly as
// random_resized_crop followed by random_horizontal_flip finishes them.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>

#include "ffcv/crop.hpp"
#include "ffcv/decoders.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/image/encoded_crop.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

// Half the samples JPEG, half raw, of varied sizes.
std::string write_mixed(const test::TempDir& dir) {
  const std::string path = dir.file("mixed.beton");
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kSmart;
  options.smart_threshold = 160 * 200 * 3;  // larger images are stored as JPEG
  options.jpeg_quality = 90;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(options)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(48, [](std::uint64_t i) {
        const int width = 120 + static_cast<int>(i % 6) * 41, height = 100 + int(i % 5) * 33;
        return std::vector<FieldValue>{test::gradient_image(width, height, i),
                                       static_cast<std::int64_t>(i)};
      }));
  return path;
}

OpParams crop_params(bool encoded) {
  OpParams params({{"size", std::int64_t{48}}});
  if (encoded) params.set("flip", 0.5);
  return params;
}

struct Epoch {
  std::vector<std::uint64_t> indices;
  std::vector<std::vector<std::uint8_t>> samples;  // one per index
  std::uint64_t sample_bytes = 0;
};

Epoch run(const std::string& path, std::vector<PipelineSpec> pipelines, int workers = 2) {
  LoaderOptions options;
  options.batch_size = 16;
  options.order.seed = 11;
  options.num_workers = workers;
  Loader loader(path, std::move(pipelines), options);
  Epoch epoch;
  auto it = loader.epoch(2);
  while (auto batch = it.next()) {
    const BatchTensor images = batch->output("image");
    epoch.sample_bytes = images.state->byte_size();
    for (std::uint64_t k = 0; k < batch->size(); ++k) {
      epoch.indices.push_back(batch->indices()[k]);
      epoch.samples.emplace_back(images.data + k * epoch.sample_bytes,
                                 images.data + (k + 1) * epoch.sample_bytes);
    }
  }
  return epoch;
}

SampleContext context_of(std::uint64_t index, std::uint32_t stream) {
  SampleContext context;
  context.epoch = 2;
  context.index = index;
  context.stream = stream;
  context.epoch_key = SampleContext::make_epoch_key(11, 2);
  return context;
}

}  // namespace

TEST_CASE("encoded crop records: the CPU path's windows and flips, the JPEG's own bytes",
          "[encoded_crop][loader]") {
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  const Reader reader(path);
  const Epoch encoded = run(
      path, {{"image",
              "image",
              OpRegistry::global().make_decoder("random_resized_crop_encoded", crop_params(true)),
              {}}});
  const Epoch cpu =
      run(path, {{"image",
                  "image",
                  OpRegistry::global().make_decoder("random_resized_crop", crop_params(false)),
                  {OpRegistry::global().make_operation("random_horizontal_flip", {})}}});
  REQUIRE(encoded.indices == cpu.indices);
  REQUIRE(encoded.indices.size() == 48);
  int jpegs = 0, raws = 0, flips = 0;
  for (std::size_t s = 0; s < encoded.indices.size(); ++s) {
    const std::uint64_t index = encoded.indices[s];
    const std::vector<std::uint8_t>& record = encoded.samples[s];
    const EncodedCropHeader header = EncodedCropHeader::load(record);
    const ImageMetadata image = ImageMetadata::load(reader.column(index, 0));
    INFO("sample " << index);
    CHECK(header.sample == index);
    CHECK(header.frame_width == image.width);
    CHECK(header.frame_height == image.height);
    CHECK(header.out_height == 48);
    CHECK(header.out_width == 48);
    const SampleContext decoder = context_of(index, 0);
    const CropWindow expected =
        random_resized_crop(image.height, image.width, {0.08, 1.0}, {0.75, 4.0 / 3.0},
                            [&](std::uint32_t n) { return decoder.uniform(n); });
    CHECK(header.window == expected);
    CHECK(header.flip == (context_of(index, 1).uniform(0) < 0.5));
    flips += header.flip;
    const std::uint8_t* payload = record.data() + kEncodedCropHeaderBytes;
    if (image.mode == StoredImageMode::kJpg) {
      ++jpegs;
      const std::span<const std::uint8_t> stored = reader.payload(image.data_ptr);
      REQUIRE(header.kind == EncodedCropKind::kJpeg);
      REQUIRE(header.payload_bytes == stored.size());
      CHECK(std::memcmp(payload, stored.data(), stored.size()) == 0);
      CHECK(header.hardware_ok);  // our writer's JPEGs: baseline, 8-bit, YCbCr
      CHECK(header.components == 3);
    } else {
      ++raws;
      REQUIRE(header.kind == EncodedCropKind::kPixels);
      // Finished on the CPU exactly as the CPU path finishes it.
      CHECK(std::memcmp(payload, cpu.samples[s].data(), 48 * 48 * 3) == 0);
    }
  }
  CHECK(jpegs > 10);
  CHECK(raws > 10);
  CHECK(flips > 5);
  CHECK(flips < 43);
  // Same seed, same bytes (records included) for any number of workers.
  const Epoch one =
      run(path,
          {{"image",
            "image",
            OpRegistry::global().make_decoder("random_resized_crop_encoded", crop_params(true)),
            {}}},
          1);
  CHECK(one.indices == encoded.indices);
  CHECK(one.samples == encoded.samples);
}

TEST_CASE("encoded crop records: center crops and progressive resizing", "[encoded_crop]") {
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  auto decoder = std::dynamic_pointer_cast<ResizableDecoder>(OpRegistry::global().make_decoder(
      "center_crop_encoded", OpParams({{"size", std::int64_t{32}}, {"ratio", 0.5}})));
  REQUIRE(decoder);
  decoder->set_output_size(40, 56);
  const Epoch epoch = run(path, {{"image", "image", decoder, {}}});
  const Reader reader(path);
  for (std::size_t s = 0; s < epoch.indices.size(); ++s) {
    const EncodedCropHeader header = EncodedCropHeader::load(epoch.samples[s]);
    const ImageMetadata image = ImageMetadata::load(reader.column(epoch.indices[s], 0));
    CHECK(header.window == center_crop(image.height, image.width, 0.5));
    CHECK(header.out_height == 40);
    CHECK(header.out_width == 56);
    CHECK_FALSE(header.flip);
  }
  // Room for the largest JPEG of the field or the output's pixels, in whole cache lines.
  CHECK(epoch.sample_bytes % 64 == 0);
  CHECK(epoch.sample_bytes >= kEncodedCropHeaderBytes + 40 * 56 * 3);
}

TEST_CASE("encoded crop records: a bad header or payload is one clear error", "[encoded_crop]") {
  std::vector<std::uint8_t> record(kEncodedCropHeaderBytes + 3 * 4 * 4);
  EncodedCropHeader header;
  header.kind = EncodedCropKind::kPixels;
  header.out_height = header.out_width = 4;
  header.frame_height = header.frame_width = 10;
  header.window = {1, 2, 5, 6};
  header.payload_bytes = 48;
  header.sample = 7;
  header.store(record.data());
  CHECK(EncodedCropHeader::load(record).window == header.window);
  const auto fails_with = [&](EncodedCropHeader changed, const std::string& words) {
    std::vector<std::uint8_t> copy = record;
    changed.store(copy.data());
    CHECK_THROWS_WITH(EncodedCropHeader::load(copy),
                      Catch::Contains(words) && Catch::Contains("sample 7"));
  };
  EncodedCropHeader outside = header;
  outside.window = {6, 2, 5, 6};
  fails_with(outside, "crop window outside");
  EncodedCropHeader overflowing = header;  // top + height would overflow an int
  overflowing.window = {std::numeric_limits<int>::max(), 2, 1, 6};
  fails_with(overflowing, "crop window outside");
  EncodedCropHeader too_long = header;
  too_long.kind = EncodedCropKind::kJpeg;
  too_long.payload_bytes = 49;
  fails_with(too_long, "does not fit");
  EncodedCropHeader no_side = header;
  no_side.out_width = 0;
  fails_with(no_side, "side outside");
  std::vector<std::uint8_t> unknown = record;
  unknown[0] = 9;
  CHECK_THROWS_WITH(EncodedCropHeader::load(unknown), Catch::Contains("unknown kind 9"));
  CHECK_THROWS_WITH(EncodedCropHeader::load(std::span(record).first(20)),
                    Catch::Contains("shorter than"));
}

TEST_CASE("encoded crop: a damaged JPEG header fails on the worker, where on_error applies",
          "[encoded_crop][loader]") {
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  test::break_jpeg_samples(path, {3});
  LoaderOptions options;
  options.batch_size = 8;
  options.on_error = OnSampleError::kSkip;
  Loader loader(
      path,
      {{"image",
        "image",
        OpRegistry::global().make_decoder("random_resized_crop_encoded", crop_params(true)),
        {}}},
      options);
  std::uint64_t seen = 0;
  auto it = loader.epoch(0);
  while (auto batch = it.next()) {
    for (const std::uint64_t index : batch->indices()) CHECK(index != 3);
    seen += batch->size();
  }
  CHECK(seen == 47);
}
