// The device steps on CPU tensors: layouts, errors, and the same values as the loader's CPU
// steps (the CUDA side of the same comparison is device_parity_test.cpp).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>

#include "cpu_step_reference.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/torch/device_stage.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;
using torch_adapter::DeviceStage;

namespace {

const TensorState kImage{DType::parse("|u1"), {6, 5, 3}, Device::kCpu};
const std::string& kNormalize = test::kImageNetNormalize;

at::Tensor random_images(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c = 3) {
  return test::random_images(11, n, h, w, c);
}

}  // namespace

TEST_CASE("to_torch_image: NHWC becomes an NCHW channels_last view, or a contiguous copy",
          "[device_ops]") {
  const at::Tensor images = random_images(2, 6, 5);
  const DeviceStage view("image", kImage, std::vector<std::string>{"to_torch_image"});
  CHECK(view.output_state().shape == std::vector<std::uint64_t>{3, 6, 5});
  const at::Tensor nchw = view.apply(images);
  CHECK(nchw.sizes() == at::IntArrayRef({2, 3, 6, 5}));
  CHECK(nchw.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(nchw.data_ptr() == images.data_ptr());  // no copy
  CHECK(torch::equal(nchw, images.permute({0, 3, 1, 2})));

  const DeviceStage copy("image", kImage,
                         std::vector<std::string>{"to_torch_image:channels_last=false"});
  const at::Tensor planar = copy.apply(images);
  CHECK(planar.is_contiguous());
  CHECK(torch::equal(planar, images.permute({0, 3, 1, 2})));

  CHECK_THROWS_WITH(DeviceStage("image", TensorState{DType::parse("|u1"), {6, 5}, Device::kCpu},
                                std::vector<std::string>{"to_torch_image"}),
                    Catch::Contains("output 'image'") && Catch::Contains("[H, W, C]"));
}

TEST_CASE("normalize on the device side matches the CPU step bit for bit and the formula",
          "[device_ops]") {
  const at::Tensor images = random_images(4, 6, 5);
  for (const std::string dtype : {"float32", "float16"}) {
    const std::string text = kNormalize + ",dtype=" + dtype;
    const DeviceStage stage("image", kImage, std::vector<std::string>{text});
    CHECK(stage.output_state().dtype == DType::parse(dtype));
    const at::Tensor ours = stage.apply(images);
    const at::Tensor cpu_step = test::run_cpu_step(text, images);
    REQUIRE(ours.scalar_type() == cpu_step.scalar_type());
    CHECK(torch::equal(ours, cpu_step));

    // Independent reference: (v - mean) / std in double, within the output type's rounding.
    const at::Tensor mean = torch::tensor({123.675, 116.28, 103.53}, torch::kFloat64);
    const at::Tensor std_dev = torch::tensor({58.395, 57.12, 57.375}, torch::kFloat64);
    const at::Tensor formula = (images.to(torch::kFloat64) - mean) / std_dev;
    const double tolerance = dtype == "float32" ? 1e-6 : 1e-3;  // > half an ulp at |x| < 4
    CHECK(torch::allclose(ours.to(torch::kFloat64), formula, 0, tolerance));
  }
}

TEST_CASE("normalize after to_torch_image keeps the channels_last layout and the values",
          "[device_ops]") {
  const at::Tensor images = random_images(3, 4, 7);
  const TensorState state{DType::parse("|u1"), {4, 7, 3}, Device::kCpu};
  const DeviceStage nchw("image", state, std::vector<std::string>{"to_torch_image", kNormalize});
  CHECK(nchw.output_state().shape == std::vector<std::uint64_t>{3, 4, 7});
  const at::Tensor out = nchw.apply(images);
  CHECK(out.sizes() == at::IntArrayRef({3, 3, 4, 7}));
  CHECK(out.is_contiguous(at::MemoryFormat::ChannelsLast));
  const DeviceStage nhwc("image", state, std::vector<std::string>{kNormalize});
  CHECK(torch::equal(out, nhwc.apply(images).permute({0, 3, 1, 2})));

  // A planar (NCHW-contiguous) batch is refused: the lookup walks channel-innermost memory.
  const DeviceStage planar(
      "image", state, std::vector<std::string>{"to_torch_image:channels_last=false", kNormalize});
  CHECK_THROWS_WITH(planar.apply(images), Catch::Contains("channels innermost"));
}

TEST_CASE("normalize handles any channel count and refuses bad settings", "[device_ops]") {
  const at::Tensor gray = random_images(2, 3, 3, 1);
  const TensorState one{DType::parse("|u1"), {3, 3, 1}, Device::kCpu};
  const DeviceStage stage("gray", one, std::vector<std::string>{"normalize:mean=[127],std=[64]"});
  CHECK(torch::equal(stage.apply(gray), test::run_cpu_step("normalize:mean=[127],std=[64]", gray)));

  const auto build = [](const TensorState& state, const std::string& text) {
    return DeviceStage("x", state, std::vector<std::string>{text});
  };
  CHECK_THROWS_WITH(build(TensorState{DType::parse("|u1"), {4, 5, 1}, Device::kCpu}, kNormalize),
                    Catch::Contains("3 channels"));
  CHECK_THROWS_WITH(build(kImage, "normalize:mean=[1,2],std=[1,2,3]"),
                    Catch::Contains("same, non-zero number"));
  CHECK_THROWS_WITH(build(kImage, "normalize:mean=[1,2,3],std=[1,0,3]"),
                    Catch::Contains("positive"));
  CHECK_THROWS_WITH(build(kImage, kNormalize + ",dtype=int8"),
                    Catch::Contains("float32 or float16"));
  CHECK_THROWS_WITH(build(kImage, kNormalize + ",dtyp=float16"), Catch::Contains("dtyp"));
  const TensorState floats{DType::parse("<f4"), {6, 5, 3}, Device::kCpu};
  CHECK_THROWS_WITH(build(floats, kNormalize), Catch::Contains("uint8"));
}

TEST_CASE("convert on the device side matches the CPU step", "[device_ops]") {
  torch::manual_seed(3);
  const at::Tensor values = (torch::rand({5, 4, 3}) * 400 - 200).to(torch::kFloat32);
  const TensorState state{DType::parse("<f4"), {4, 3}, Device::kCpu};
  for (const std::string dtype : {"int32", "float16", "float64"}) {
    const std::string text = "convert:dtype=" + dtype;
    const DeviceStage stage("x", state, std::vector<std::string>{text});
    CHECK(stage.output_state().dtype == DType::parse(dtype));
    CHECK(torch::equal(stage.apply(values), test::run_cpu_step(text, values)));
  }
  const at::Tensor bytes = random_images(2, 3, 2);
  CHECK(torch::equal(DeviceStage("x", TensorState{DType::parse("|u1"), {3, 2, 3}, Device::kCpu},
                                 std::vector<std::string>{"convert:dtype=float32"})
                         .apply(bytes),
                     test::run_cpu_step("convert:dtype=float32", bytes)));
}

TEST_CASE("device steps are found by name, a typo is answered with the closest", "[device_ops]") {
  const auto names = torch_adapter::DeviceOpRegistry::global().operations();
  std::vector<std::string> listed;
  for (const auto& [name, summary] : names) listed.push_back(name);
  CHECK(listed == std::vector<std::string>{"convert", "decode_crops", "normalize", "to_device",
                                           "to_torch_image"});
  if (!torch::cuda::is_available()) {
    // Without a GPU (or without nvJPEG in the build) the GPU image path is refused in one line.
    CHECK_THROWS_WITH(torch_adapter::DeviceOpRegistry::global().make_operation(
                          "decode_crops", OpParams({{"size", std::int64_t{8}}})),
                      Catch::Contains("decode_crops: ") &&
                          (Catch::Contains("no CUDA device") || Catch::Contains("no GPU image")));
  }
  CHECK_THROWS_WITH(
      DeviceStage("image", kImage, std::vector<std::string>{"to_torch_imag"}),
      Catch::Contains("output 'image'") && Catch::Contains("did you mean 'to_torch_image'"));
  CHECK(DeviceStage().empty());
  CHECK_FALSE(
      DeviceStage("image", kImage, std::vector<std::string>{"to_torch_image"}).moves_to_device());
}

TEST_CASE("to_device is refused clearly where no GPU can take the batch", "[device_ops]") {
  if (torch::cuda::is_available()) {
    const DeviceStage stage("image", kImage, std::vector<std::string>{"to_device"});
    CHECK(stage.moves_to_device());
    CHECK(stage.output_state().device == Device::kCuda);
    return;
  }
  CHECK_THROWS_AS(DeviceStage("image", kImage, std::vector<std::string>{"to_device"}), ConfigError);
}
