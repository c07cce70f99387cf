// Every device step on a CUDA device gives the values its CPU twin gives, and DeviceTransfer
// runs the stages on its copy stream without giving a slot back before the copy is done, nor
// a good batch up for the failure of the one after it.
// Without a visible GPU the program exits with 77, which CTest reports as skipped.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cstdio>

#include "cpu_step_reference.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/torch/device_stage.hpp"
#include "ffcv/torch/device_transfer.hpp"
#include "good_batch_before_failure.hpp"
#include "test_support.hpp"

using namespace ffcv;
using torch_adapter::DeviceStage;

namespace {

const std::string& kNormalize = test::kImageNetNormalize;

// 64 uint8 images [H, W, 3] with their index as label.
std::string write_images(const test::TempDir& dir, std::uint64_t h, std::uint64_t w) {
  const std::string path = dir.file("images.beton");
  const DType u8 = DType::parse("|u1");
  auto make = [&](std::uint64_t i) -> std::vector<FieldValue> {
    NdArray array{u8, {h, w, 3}, std::vector<std::uint8_t>(h * w * 3)};
    for (std::size_t k = 0; k < array.bytes.size(); ++k) {
      array.bytes[k] = static_cast<std::uint8_t>((k * 7 + i * 13) % 256);
    }
    return {array, static_cast<std::int64_t>(i)};
  };
  DatasetWriter(path,
                {{"image", std::make_shared<NdArrayField>(u8, std::vector<std::uint64_t>{h, w, 3})},
                 {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(64, make));
  return path;
}

}  // namespace

TEST_CASE("each device step on CUDA equals its CPU twin", "[device_parity]") {
  const at::Tensor images = test::random_images(5, 8, 33, 17);
  const TensorState state{DType::parse("|u1"), {33, 17, 3}, Device::kCpu};
  for (const std::string dtype : {"float32", "float16"}) {
    const std::string text = kNormalize + ",dtype=" + dtype;
    const DeviceStage gpu("image", state, std::vector<std::string>{"to_device", text});
    const at::Tensor ours = gpu.apply(images.pin_memory());
    CHECK(ours.is_cuda());
    CHECK(torch::equal(ours.cpu(), test::run_cpu_step(text, images)));
  }
  const DeviceStage layout("image", state,
                           std::vector<std::string>{"to_device", "to_torch_image", kNormalize});
  const at::Tensor nchw = layout.apply(images);
  CHECK(nchw.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(torch::equal(nchw.cpu(), test::run_cpu_step(kNormalize, images).permute({0, 3, 1, 2})));

  const at::Tensor floats = (torch::rand({6, 5, 4}) * 300 - 150).to(torch::kFloat32);
  const TensorState float_state{DType::parse("<f4"), {5, 4}, Device::kCpu};
  for (const std::string dtype : {"int32", "float16", "uint8"}) {
    const std::string text = "convert:dtype=" + dtype;
    const at::Tensor input = dtype == "uint8" ? floats.abs() : floats;
    const DeviceStage gpu("x", float_state, std::vector<std::string>{"to_device", text});
    CHECK(torch::equal(gpu.apply(input).cpu(), test::run_cpu_step(text, input)));
  }
}

TEST_CASE("DeviceTransfer runs each output's stage on its stream, values match the CPU",
          "[device_parity]") {
  test::TempDir dir;
  const std::string path = write_images(dir, 24, 20);
  LoaderOptions options;
  options.batch_size = 16;
  options.batches_ahead = 1;  // 3 slots: a slot given back early would be overwritten
  options.num_workers = 2;
  options.allocator = torch_adapter::pinned_allocator();
  Loader loader(path, {}, options);
  const TensorState image_state = loader.outputs()[0].second;
  std::vector<DeviceStage> stages{
      DeviceStage(
          "image", image_state,
          std::vector<std::string>{"to_device", "to_torch_image", kNormalize + ",dtype=float16"}),
      DeviceStage("label", loader.outputs()[1].second, std::vector<std::string>{})};
  torch_adapter::DeviceTransfer transfer(loader.epoch(0), 0, std::move(stages));

  Loader reference(path, {}, options);
  EpochIterator cpu = reference.epoch(0);
  std::vector<at::Tensor> kept;  // holding every device batch must not stall the host ring
  int batches = 0;
  while (auto tensors = transfer.next()) {
    auto expected = torch_adapter::to_tensors(std::move(*cpu.next()));
    const at::Tensor want =
        test::run_cpu_step(kNormalize + ",dtype=float16", expected[0]).permute({0, 3, 1, 2});
    CHECK((*tensors)[0].is_cuda());
    CHECK(torch::equal((*tensors)[0].cpu(), want));
    CHECK_FALSE((*tensors)[1].is_cuda());  // no to_device: the host view
    CHECK(torch::equal((*tensors)[1], expected[1]));
    kept.push_back((*tensors)[0]);
    ++batches;
  }
  CHECK(batches == 4);
}

TEST_CASE("DeviceTransfer hands out the batch before a failing one, then the error",
          "[device_parity]") {
  test::check_good_batch_before_failure(at::Device(at::kCUDA, 0));
}

// Run before any case (tests/unit/catch_main.cpp).
extern "C" int ffcv_test_preflight() {
  if (torch::cuda::is_available()) return -1;
  std::printf("no CUDA device: device parity tests skipped\n");
  return 77;
}
