// The GPU image path (ffcv/torch/gpu_image_decode.hpp) against the CPU path on the same file and
// seed: same samples, labels, windows and flips; raw samples bit for bit; JPEG samples within the
// stated tolerance (different IDCT, chroma upsampling and resize arithmetic); a damaged JPEG in
// the middle of a batch; the backends. Without a visible GPU the program exits with 77, which
// CTest reports as skipped.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/torch/batch_tensors.hpp"
#include "ffcv/torch/device_op_registry.hpp"
#include "ffcv/torch/device_transfer.hpp"
#include "ffcv/torch/gpu_image_decode.hpp"
#include "test_support.hpp"

using namespace ffcv;
using torch_adapter::DeviceStage;

namespace {

constexpr int kSize = 64;
constexpr std::uint64_t kSamples = 96;

// JPEGs above 150 x 150 px, raw images below, of varied sizes; label = index.
std::string write_mixed(const test::TempDir& dir) {
  const std::string path = dir.file("mixed.beton");
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kSmart;
  options.smart_threshold = 150 * 150 * 3;
  options.jpeg_quality = 90;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(options)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(kSamples, [](std::uint64_t i) {
        const int width = 110 + static_cast<int>(i % 7) * 57, height = 100 + int(i % 5) * 61;
        return std::vector<FieldValue>{test::gradient_image(width, height, i),
                                       static_cast<std::int64_t>(i)};
      }));
  return path;
}

LoaderOptions options(OnSampleError on_error = OnSampleError::kFail) {
  LoaderOptions o;
  o.batch_size = 32;
  o.order.seed = 5;
  o.num_workers = 2;
  o.on_error = on_error;
  o.allocator = torch_adapter::pinned_allocator();
  return o;
}

struct Result {
  std::vector<std::int64_t> labels;
  std::vector<at::Tensor> images;  // one [H, W, 3] uint8 CPU tensor per sample
};

// The CPU path: the crop decoder (full-scale accurate decode, so the only differences left are
// the decoders' and the resize's arithmetic) and random_horizontal_flip.
Result cpu_path(const std::string& path) {
  Loader loader(
      path,
      {{"image",
        "image",
        OpRegistry::global().make_decoder(
            "random_resized_crop",
            OpParams({{"size", std::int64_t{kSize}}, {"dct_scaling", false}, {"fast_dct", false}})),
        {OpRegistry::global().make_operation("random_horizontal_flip", {})}},
       {"label", "label", OpRegistry::global().make_decoder("int", {}), {}}},
      options());
  Result result;
  auto it = loader.epoch(3);
  while (auto batch = it.next()) {
    const std::vector<at::Tensor> tensors = torch_adapter::to_tensors(std::move(*batch));
    for (std::int64_t k = 0; k < tensors[0].size(0); ++k) {
      result.images.push_back(tensors[0][k].clone());
      result.labels.push_back(tensors[1][k][0].item<std::int64_t>());
    }
  }
  return result;
}

Result gpu_path(const std::string& path, const std::string& backend,
                OnSampleError on_error = OnSampleError::kFail,
                torch_adapter::GpuDecodeCounts* counts = nullptr) {
  Loader loader(
      path,
      {{"image",
        "image",
        OpRegistry::global().make_decoder("random_resized_crop_encoded",
                                          OpParams({{"size", std::int64_t{kSize}}, {"flip", 0.5}})),
        {}},
       {"label", "label", OpRegistry::global().make_decoder("int", {}), {}}},
      options(on_error));
  const auto decode = torch_adapter::DeviceOpRegistry::global().make_operation(
      "decode_crops", OpParams({{"size", std::int64_t{kSize}}, {"backend", backend}}));
  std::vector<DeviceStage> stages;
  for (const auto& [name, state] : loader.outputs()) {
    if (name == "image") {
      stages.emplace_back(name, state,
                          std::vector<std::shared_ptr<torch_adapter::DeviceOperation>>{decode});
    } else {
      stages.emplace_back(name, state, std::vector<std::string>{"to_device"});
    }
  }
  Result result;
  torch_adapter::DeviceTransfer transfer(loader.epoch(3), 0, std::move(stages));
  while (auto tensors = transfer.next()) {
    CHECK((*tensors)[0].is_cuda());
    const at::Tensor images = (*tensors)[0].cpu(), labels = (*tensors)[1].cpu();
    for (std::int64_t k = 0; k < images.size(0); ++k) {
      result.images.push_back(images[k].clone());
      result.labels.push_back(labels[k][0].item<std::int64_t>());
    }
  }
  if (counts != nullptr) *counts = torch_adapter::gpu_decode_counts(*decode);
  return result;
}

double psnr(const at::Tensor& a, const at::Tensor& b) {
  const double mse = (a.to(at::kDouble) - b.to(at::kDouble)).pow(2).mean().item<double>();
  return mse == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace

TEST_CASE("GPU path: same samples, windows and flips as the CPU path, pixels within tolerance",
          "[gpu_decode]") {
  REQUIRE(torch_adapter::gpu_image_decode_built());
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  const Reader reader(path);
  const Result cpu = cpu_path(path);
  torch_adapter::GpuDecodeCounts counts;
  const Result gpu = gpu_path(path, "auto", OnSampleError::kFail, &counts);
  REQUIRE(gpu.labels == cpu.labels);
  REQUIRE(gpu.labels.size() == kSamples);
  double lowest = 99, total = 0, worst_mirror = 0;
  int jpegs = 0, largest_difference = 0;
  for (std::size_t s = 0; s < gpu.labels.size(); ++s) {
    const auto index = static_cast<std::uint64_t>(gpu.labels[s]);
    INFO("sample " << index);
    if (ImageMetadata::load(reader.column(index, 0)).mode == StoredImageMode::kRaw) {
      CHECK(torch::equal(gpu.images[s], cpu.images[s]));  // finished on the CPU worker
      continue;
    }
    ++jpegs;
    const double quality = psnr(gpu.images[s], cpu.images[s]);
    // The mirror image of the CPU's output: what a wrong flip would give.
    worst_mirror = std::max(worst_mirror, psnr(gpu.images[s], cpu.images[s].flip({1})));
    lowest = std::min(lowest, quality);
    total += quality;
    largest_difference =
        std::max(largest_difference,
                 (gpu.images[s].to(at::kInt) - cpu.images[s].to(at::kInt)).abs().max().item<int>());
    CHECK(quality >= 30.0);
  }
  std::printf(
      "GPU path against the CPU path: %d JPEG samples, PSNR mean %.2f dB, lowest %.2f dB, "
      "largest difference %d levels; a mirrored window would give at most %.2f dB; "
      "backend %s (%llu hardware, %llu hybrid, %llu host, %llu raw)\n",
      jpegs, total / std::max(1, jpegs), lowest, largest_difference, worst_mirror,
      counts.backend.c_str(), static_cast<unsigned long long>(counts.hardware_frames),
      static_cast<unsigned long long>(counts.hybrid_frames),
      static_cast<unsigned long long>(counts.host_frames),
      static_cast<unsigned long long>(counts.pixel_records));
  CHECK(jpegs > 30);
  CHECK(counts.pixel_records + counts.hardware_frames + counts.hybrid_frames + counts.host_frames ==
        kSamples);
  CHECK(counts.host_frames == 0);
}

TEST_CASE("GPU path: two passes over the same epoch give the same batches", "[gpu_decode]") {
  // Two preparing threads decode side by side, each with a decoder of its own, in whatever
  // order they get to the batches: the batches handed out must not depend on it.
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  torch_adapter::GpuDecodeCounts first, second;
  const Result a = gpu_path(path, "auto", OnSampleError::kFail, &first);
  const Result b = gpu_path(path, "auto", OnSampleError::kFail, &second);
  REQUIRE(a.labels == b.labels);
  for (std::size_t s = 0; s < a.labels.size(); ++s) CHECK(torch::equal(a.images[s], b.images[s]));
  std::printf(
      "nvJPEG memory of the decoders used: %llu blocks from CUDA, %llu reused (first "
      "pass); %llu and %llu (second)\n",
      static_cast<unsigned long long>(first.nvjpeg_allocations),
      static_cast<unsigned long long>(first.nvjpeg_reuses),
      static_cast<unsigned long long>(second.nvjpeg_allocations),
      static_cast<unsigned long long>(second.nvjpeg_reuses));
}

TEST_CASE("GPU path: the hybrid backend gives the hardware backend's windows", "[gpu_decode]") {
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  torch_adapter::GpuDecodeCounts automatic, hybrid;
  const Result a = gpu_path(path, "auto", OnSampleError::kFail, &automatic);
  const Result h = gpu_path(path, "hybrid", OnSampleError::kFail, &hybrid);
  REQUIRE(a.labels == h.labels);
  CHECK(hybrid.hardware_frames == 0);
  CHECK(hybrid.backend.rfind("gpu_hybrid", 0) == 0);
  double lowest = 99;
  for (std::size_t s = 0; s < a.labels.size(); ++s)
    lowest = std::min(lowest, psnr(a.images[s], h.images[s]));
  std::printf("auto backend: %s; against the hybrid backend, lowest PSNR %.2f dB\n",
              automatic.backend.c_str(), lowest);
  CHECK(lowest >= 35.0);
  if (automatic.backend.rfind("hardware", 0) == 0) CHECK(automatic.hardware_frames > 0);
}

TEST_CASE("GPU path: a JPEG damaged mid-batch costs only itself", "[gpu_decode]") {
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  const Result clean = gpu_path(path, "auto");
  // Sample 40's scan data cut short by an end-of-image marker halfway through its bytes, and
  // sample 41's start marker broken (the CPU worker refuses it; on_error = skip leaves it out).
  const Reader before(path);
  const std::uint64_t ptr = ImageMetadata::load(before.column(40, 0)).data_ptr;
  REQUIRE(ImageMetadata::load(before.column(40, 0)).mode == StoredImageMode::kJpg);
  const std::uint64_t bytes = before.payload(ptr).size();
  std::vector<std::uint8_t> file = test::read_file(path);
  file[ptr + bytes / 2] = 0xFF;
  file[ptr + bytes / 2 + 1] = 0xD9;
  test::write_file(path, file);
  test::break_jpeg_samples(path, {41});
  torch_adapter::GpuDecodeCounts counts;
  const Result damaged = gpu_path(path, "auto", OnSampleError::kSkip, &counts);
  std::printf("damaged mid-batch: %llu decoded on the host after nvJPEG refused them\n",
              static_cast<unsigned long long>(counts.host_frames));
  REQUIRE(damaged.labels.size() == kSamples - 1);
  std::size_t d = 0;
  for (std::size_t s = 0; s < clean.labels.size(); ++s) {
    if (clean.labels[s] == 41) continue;
    REQUIRE(damaged.labels[d] == clean.labels[s]);
    if (clean.labels[s] != 40) CHECK(torch::equal(damaged.images[d], clean.images[s]));
    ++d;
  }
}

TEST_CASE("GPU path: a size that is not the records' is one clear error", "[gpu_decode]") {
  test::TempDir dir;
  const std::string path = write_mixed(dir);
  Loader loader(path,
                {{"image",
                  "image",
                  OpRegistry::global().make_decoder("center_crop_encoded",
                                                    OpParams({{"size", std::int64_t{48}}})),
                  {}}},
                options());
  const DeviceStage stage("image", loader.outputs()[0].second,
                          std::vector<std::string>{"decode_crops:size=64"});
  auto it = loader.epoch(0);
  auto batch = it.next();
  REQUIRE(batch);
  const std::vector<at::Tensor> tensors = torch_adapter::to_tensors(std::move(*batch));
  CHECK_THROWS_WITH(stage.apply(tensors[0]),
                    Catch::Contains("was cut for 48 x 48") && Catch::Contains("outputs 64 x 64"));
}

// Run before any case (tests/unit/catch_main.cpp).
extern "C" int ffcv_test_preflight() {
  if (torch::cuda::is_available()) return -1;
  std::printf("no CUDA device: GPU image path tests skipped\n");
  return 77;
}
