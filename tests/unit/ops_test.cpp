// The CPU operations against their formulas, with the random draws taken from the same
// SampleContext the engine gives them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"

using namespace ffcv;

namespace {

struct Run {
  TensorState out_state;
  std::vector<std::uint8_t> output;
};

Run run_op(const std::string& name, const OpParams& params, const TensorState& in_state,
           const std::vector<std::uint8_t>& input, const SampleContext& context) {
  auto op = OpRegistry::global().make_operation(name, params);
  Run run;
  run.out_state = op->declare(in_state);
  run.output.assign(run.out_state.byte_size(), 0xEE);
  op->apply(input.data(), run.output.data(), {}, context);
  return run;
}

TensorState image_state(std::uint64_t h, std::uint64_t w) {
  return {DType::parse("|u1"), {h, w, 3}};
}

std::vector<std::uint8_t> test_image(std::uint64_t h, std::uint64_t w) {
  std::vector<std::uint8_t> image(h * w * 3);
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = static_cast<std::uint8_t>(20 + (i * 37) % 200);
  return image;
}

SampleContext context_for(std::uint64_t index) {
  SampleContext context;
  context.index = index;
  context.stream = 3;
  context.epoch_key = SampleContext::make_epoch_key(11, 2);
  return context;
}

}  // namespace

TEST_CASE("normalize maps each channel through (v - mean) / std", "[ops]") {
  const auto image = test_image(4, 5);
  const OpParams params({{"mean", std::vector<double>{123.675, 116.28, 103.53}},
                         {"std", std::vector<double>{58.395, 57.12, 57.375}}});
  const Run f32 = run_op("normalize", params, image_state(4, 5), image, {});
  CHECK(f32.out_state.dtype.typestr() == "<f4");
  const double mean[] = {123.675, 116.28, 103.53}, stdev[] = {58.395, 57.12, 57.375};
  for (std::size_t i = 0; i < image.size(); ++i) {
    const float value = load_le<float>(&f32.output[4 * i]);
    REQUIRE(value == static_cast<float>((image[i] - mean[i % 3]) / stdev[i % 3]));
  }
  OpParams half = params;
  half.set("dtype", std::string("float16"));
  const Run f16 = run_op("normalize", half, image_state(4, 5), image, {});
  CHECK(f16.out_state.dtype.typestr() == "<f2");
  // Known binary16 encodings: value 0 gives 0x0000 for a mean-valued pixel; 1.0 is 0x3c00.
  const std::vector<std::uint8_t> ones = {1, 2, 3};
  const OpParams unit({{"mean", std::vector<double>{0, 0, 0}},
                       {"std", std::vector<double>{1, 0.5, 1024}},
                       {"dtype", std::string("float16")}});
  const Run h = run_op("normalize", unit, {DType::parse("|u1"), {3}}, ones, {});
  CHECK(load_le<std::uint16_t>(&h.output[0]) == 0x3c00);  // 1.0
  CHECK(load_le<std::uint16_t>(&h.output[2]) == 0x4400);  // 4.0
  CHECK(load_le<std::uint16_t>(&h.output[4]) == 0x1a00);  // 3/1024 = 0.0029296875
  CHECK_THROWS_AS(
      run_op("normalize",
             OpParams({{"mean", std::vector<double>{0}}, {"std", std::vector<double>{0}}}),
             {DType::parse("|u1"), {1}}, {0}, {}),
      ConfigError);
}

TEST_CASE("convert casts like numpy's astype", "[ops]") {
  std::vector<std::uint8_t> floats(4 * 4);
  const float values[] = {-1.7f, 2.9f, 300.0f, 0.0f};
  for (int i = 0; i < 4; ++i) store_le(&floats[4 * i], values[i]);
  const Run ints = run_op("convert", OpParams({{"dtype", std::string("int32")}}),
                          {DType::parse("<f4"), {4}}, floats, {});
  CHECK(load_le<std::int32_t>(&ints.output[0]) == -1);
  CHECK(load_le<std::int32_t>(&ints.output[4]) == 2);
  CHECK(load_le<std::int32_t>(&ints.output[8]) == 300);
  const Run bytes = run_op("convert", OpParams({{"dtype", std::string("uint8")}}),
                           {DType::parse("<f4"), {4}}, floats, {});
  CHECK(bytes.output[2] == 44);  // 300 wraps to 300 - 256
  const Run back = run_op("convert", OpParams({{"dtype", std::string("float64")}}),
                          {DType::parse("|u1"), {3}}, {0, 128, 255}, {});
  CHECK(load_le<double>(&back.output[16]) == 255.0);
}

TEST_CASE("unpack_bits reads numpy.packbits's layout back, padding ignored", "[ops]") {
  // 13 booleans, packed by hand as numpy.packbits(bitorder="big") does: 1011 0000 1110 0|111
  // (the last three bits are padding, set here to show they are not read).
  const std::vector<std::uint8_t> packed = {0xB0, 0xE7};
  const std::vector<int> expected = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0};
  const Run floats = run_op("unpack_bits", OpParams({{"count", std::int64_t{13}}}),
                            {DType::parse("|u1"), {2}}, packed, {});
  REQUIRE(floats.out_state.shape == std::vector<std::uint64_t>{13});
  CHECK(floats.out_state.dtype == DType::parse("<f4"));
  const Run bytes = run_op("unpack_bits",
                           OpParams({{"count", std::int64_t{13}}, {"dtype", std::string("uint8")}}),
                           {DType::parse("|u1"), {2}}, packed, {});
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("bit " << i);
    CHECK(load_le<float>(&floats.output[4 * i]) == expected[i]);
    CHECK(bytes.output[i] == expected[i]);
  }
  CHECK_THROWS_WITH(run_op("unpack_bits", OpParams({{"count", std::int64_t{17}}}),
                           {DType::parse("|u1"), {2}}, packed, {}),
                    Catch::Contains("needs 3 packed bytes"));
  CHECK_THROWS_WITH(run_op("unpack_bits",
                           OpParams({{"count", std::int64_t{13}}, {"dtype", std::string("int64")}}),
                           {DType::parse("|u1"), {2}}, packed, {}),
                    Catch::Contains("float32, float16 or uint8"));
}

TEST_CASE("cutout fills one square inside the image, placed by the sample's draws", "[ops]") {
  const auto image = test_image(20, 30);
  std::vector<int> tops(20 - 6 + 1);
  for (std::uint64_t index = 0; index < 3000; ++index) {
    const SampleContext context = context_for(index);
    const Run run = run_op(
        "cutout", OpParams({{"size", std::int64_t{6}}, {"fill", std::vector<double>{1, 2, 3}}}),
        image_state(20, 30), image, context);
    const auto top = static_cast<std::uint64_t>(context.uniform(0) * 15);
    const auto left = static_cast<std::uint64_t>(context.uniform(1) * 25);
    ++tops[top];
    for (std::uint64_t y = 0; y < 20; ++y) {
      for (std::uint64_t x = 0; x < 30; ++x) {
        const bool inside = y >= top && y < top + 6 && x >= left && x < left + 6;
        for (int c = 0; c < 3; ++c) {
          const std::size_t i = (y * 30 + x) * 3 + c;
          REQUIRE(run.output[i] == (inside ? c + 1 : image[i]));
        }
      }
    }
  }
  for (const int count : tops) CHECK(count > 100);  // every position occurs (expected 200)
  CHECK_THROWS_AS(
      run_op("cutout", OpParams({{"size", std::int64_t{40}}}), image_state(20, 30), image, {}),
      ConfigError);
}

TEST_CASE("random_translate shifts by up to the padding and exposes the fill", "[ops]") {
  const auto image = test_image(8, 9);
  std::vector<int> shifts(5);
  for (std::uint64_t index = 0; index < 500; ++index) {
    const SampleContext context = context_for(index);
    const Run run = run_op("random_translate", OpParams({{"padding", std::int64_t{2}}}),
                           image_state(8, 9), image, context);
    const int dy = static_cast<int>(context.uniform(0) * 5) - 2;
    const int dx = static_cast<int>(context.uniform(1) * 5) - 2;
    ++shifts[dy + 2];
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 9; ++x) {
        const int sy = y + dy, sx = x + dx;
        const bool inside = sy >= 0 && sy < 8 && sx >= 0 && sx < 9;
        for (int c = 0; c < 3; ++c) {
          REQUIRE(run.output[(y * 9 + x) * 3 + c] == (inside ? image[(sy * 9 + sx) * 3 + c] : 0));
        }
      }
    }
  }
  for (const int count : shifts) CHECK(count > 50);
}

TEST_CASE("colour jitter follows FFCV's formulas", "[ops]") {
  const auto image = test_image(6, 7);
  const auto clip = [](double v) { return static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0)); };
  const auto gray = [&](std::size_t p) {
    return double(static_cast<std::uint8_t>(0.2989 * image[3 * p] + 0.587 * image[3 * p + 1] +
                                            0.114 * image[3 * p + 2]));
  };
  const OpParams always({{"magnitude", 0.4}, {"probability", 1.0}});
  for (std::uint64_t index = 0; index < 50; ++index) {
    const SampleContext context = context_for(index);
    const double factor = 0.6 + context.uniform(1) * 0.8;
    const Run bright = run_op("random_brightness", always, image_state(6, 7), image, context);
    const Run contrast = run_op("random_contrast", always, image_state(6, 7), image, context);
    const Run saturate = run_op("random_saturation", always, image_state(6, 7), image, context);
    double mean = 0;
    for (std::size_t p = 0; p < 42; ++p) mean += gray(p);
    mean /= 42;
    for (std::size_t i = 0; i < image.size(); ++i) {
      REQUIRE(bright.output[i] == clip(factor * image[i]));
      REQUIRE(contrast.output[i] == clip(factor * image[i] + (1 - factor) * mean));
      REQUIRE(saturate.output[i] == clip(factor * image[i] + (1 - factor) * gray(i / 3)));
    }
  }
  const OpParams never({{"magnitude", 0.4}, {"probability", 0.0}});
  CHECK(run_op("random_contrast", never, image_state(6, 7), image, context_for(1)).output == image);
  CHECK_THROWS_WITH(OpRegistry::global().make_operation("random_brightness", {}),
                    Catch::Contains("'magnitude' is required"));
}

TEST_CASE("replace_label rewrites the listed samples only", "[ops]") {
  std::vector<std::uint8_t> label(8);
  store_le<std::int64_t>(label.data(), 7);
  const OpParams params({{"indices", std::vector<double>{3, 10}}, {"label", std::int64_t{-1}}});
  const TensorState state{DType::parse("<i8"), {1}};
  CHECK(load_le<std::int64_t>(
            run_op("replace_label", params, state, label, context_for(10)).output.data()) == -1);
  CHECK(load_le<std::int64_t>(
            run_op("replace_label", params, state, label, context_for(4)).output.data()) == 7);
}

TEST_CASE("poison blends the mask into listed samples only, clamped and truncated", "[ops]") {
  const auto image = test_image(2, 3);
  std::vector<double> mask(2 * 3 * 3);
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = 250.0 - 10.0 * i;
  std::vector<double> alpha{0.0, 0.25, 0.5, 0.75, 1.0, 0.1};  // one per pixel
  const OpParams params({{"mask", mask},
                         {"alpha", alpha},
                         {"indices", std::vector<double>{7, 3}},
                         {"clamp", std::vector<double>{20, 200}}});
  const Run poisoned = run_op("poison", params, image_state(2, 3), image, context_for(3));
  for (std::size_t k = 0; k < image.size(); ++k) {
    const double a = alpha[k / 3];
    const double blended = std::clamp(image[k] * (1 - a) + mask[k] * a, 20.0, 200.0);
    CHECK(poisoned.output[k] == static_cast<std::uint8_t>(blended));
  }
  const Run clean = run_op("poison", params, image_state(2, 3), image, context_for(4));
  CHECK(clean.output == image);
  // One alpha for every pixel.
  const OpParams uniform({{"mask", mask}, {"alpha", 0.5}, {"indices", std::vector<double>{3}}});
  const Run half = run_op("poison", uniform, image_state(2, 3), image, context_for(3));
  CHECK(half.output[4] == static_cast<std::uint8_t>(image[4] * 0.5 + mask[4] * 0.5));
  // The mask must match the image.
  CHECK_THROWS_WITH(run_op("poison", uniform, image_state(3, 3), test_image(3, 3), {}),
                    Catch::Contains("mask has 18 values"));
  CHECK_THROWS_AS(
      run_op("poison",
             OpParams({{"mask", mask}, {"alpha", 2.0}, {"indices", std::vector<double>{}}}),
             image_state(2, 3), image, {}),
      ConfigError);
}

TEST_CASE("squeeze drops size-1 dimensions and keeps the bytes", "[ops]") {
  const TensorState label{DType::parse("<i8"), {1}};
  std::vector<std::uint8_t> bytes(8);
  bytes[0] = 42;
  const Run all = run_op("squeeze", {}, label, bytes, {});
  CHECK(all.out_state.shape.empty());
  CHECK(all.output == bytes);
  const TensorState padded{DType::parse("|u1"), {1, 4, 1}};
  const Run some = run_op("squeeze", OpParams({{"dims", std::vector<double>{2}}}), padded,
                          std::vector<std::uint8_t>{1, 2, 3, 4}, {});
  CHECK(some.out_state.shape == std::vector<std::uint64_t>{1, 4});
  CHECK_THROWS_WITH(run_op("squeeze", OpParams({{"dims", std::vector<double>{1}}}), padded,
                           std::vector<std::uint8_t>{1, 2, 3, 4}, {}),
                    Catch::Contains("has size 4, not 1"));
}
