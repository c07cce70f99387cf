// Micro-benchmarks of the image kernels on one thread, on real photographs (libjxl-testdata's
// 2268x1512 "flower", stored as 4:2:0 and as 4:4:4 JPEG at quality 85):
//   WindowDecode/<file>/<M>: decode_jpeg_window of a centred window of ~35% of the area, with
//     min_out_width/height chosen so that the decoder picks DCT scale M/8 (1, 2, 4, 8).
//   WholeDecodeInto/<file>: TurboJPEG whole-image decode at full size into a preallocated buffer
//     (decode_jpeg_into, fast IDCT): the baseline the window decoder is measured against.
//   WholeDecodeScaled/<file>/<M>: TurboJPEG whole-image decode at scale M/8 (decode_jpeg, fast
//     IDCT; it allocates its output), to separate the window's saving from the scale's.
//   FlipOp, NormalizeOp/<32|16>: the random_horizontal_flip (p = 0.5, the sample index varies
//     so half of the calls mirror) and normalize operations on a 224x224x3 uint8 image, through
//     the operation registry; bytes/s counts the uint8 input.
//   RandomResizedCrop/<field>/<size>: the random_resized_crop decoder on one stored JPEG sample
//     (the flower re-encoded by the dataset writer at quality 90, at most 512 px or full size),
//     window decode + resize, a new crop for every call.
// Resizing alone is covered by ffcv_micro_resize. Without libjxl-testdata
// (apt-get install libjxl-testdata) the JPEG benchmarks report an error and the others run.
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/jpeg_window.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/op_registry.hpp"

namespace {

using namespace ffcv;

constexpr char kTestdataDir[] = "/usr/share/libjxl-testdata/jxl/flower/";

struct TestJpeg {
  const char* name;  // shown in the label
  const char* file;  // under kTestdataDir
};
const TestJpeg kJpegs[] = {{"420", "flower.png.im_q85_420.jpg"},
                           {"444", "flower.png.im_q85_444.jpg"}};

// A test photograph's bytes and frame size, or why it cannot be used.
struct LoadedJpeg {
  std::vector<std::uint8_t> bytes;
  JpegInfo info;
  std::string error;
};

const LoadedJpeg& load_jpeg(std::size_t which) {
  static const std::vector<LoadedJpeg> loaded = [] {
    std::vector<LoadedJpeg> all;
    for (const TestJpeg& jpeg : kJpegs) {
      LoadedJpeg entry;
      const std::string path = std::string(kTestdataDir) + jpeg.file;
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        entry.error = path + " is missing (apt-get install libjxl-testdata)";
      } else {
        entry.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        try {
          entry.info = read_jpeg_info(entry.bytes);
        } catch (const std::exception& e) {
          entry.error = path + ": " + e.what();
        }
      }
      all.push_back(std::move(entry));
    }
    return all;
  }();
  return loaded[which];
}

// The JPEG of the benchmark's first argument, or null after marking the benchmark skipped.
const LoadedJpeg* jpeg_or_skip(benchmark::State& state) {
  const LoadedJpeg& jpeg = load_jpeg(static_cast<std::size_t>(state.range(0)));
  if (jpeg.error.empty()) return &jpeg;
  state.SkipWithError(jpeg.error.c_str());
  return nullptr;
}

// The centred window of ~35% of the frame's area (each side scaled by sqrt(0.35)).
JpegWindowRequest centred_window(const JpegInfo& info) {
  const double side = std::sqrt(0.35);
  JpegWindowRequest request;
  request.width = static_cast<int>(std::lround(info.width * side));
  request.height = static_cast<int>(std::lround(info.height * side));
  request.left = (info.width - request.width) / 2;
  request.top = (info.height - request.height) / 2;
  return request;
}

std::string scale_text(int scale_num) {
  return scale_num == kDctScaleDenominator ? "1" : "1/" + std::to_string(8 / scale_num);
}

void BM_WindowDecode(benchmark::State& state) {
  const std::size_t which = static_cast<std::size_t>(state.range(0));
  const int scale_num = static_cast<int>(state.range(1));
  const LoadedJpeg* loaded = jpeg_or_skip(state);
  if (loaded == nullptr) return;
  const LoadedJpeg& jpeg = *loaded;
  JpegWindowRequest request = centred_window(jpeg.info);
  // The window's size at scale M/8, rounded down: reached at M/8 and not at the next smaller one.
  request.min_out_width = request.width * scale_num / kDctScaleDenominator;
  request.min_out_height = request.height * scale_num / kDctScaleDenominator;
  if (choose_window_scale(request.width, request.height, request.min_out_width,
                          request.min_out_height) != scale_num) {
    state.SkipWithError("the minimum output size does not select the intended DCT scale");
    return;
  }
  std::vector<std::uint8_t> out;
  DecodedWindow result;
  for (auto _ : state) {
    result = decode_jpeg_window(jpeg.bytes, request, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["scale"] = static_cast<double>(result.scale_num) / kDctScaleDenominator;
  state.SetLabel(std::string(kJpegs[which].name) + " window " + std::to_string(request.width) +
                 "x" + std::to_string(request.height) + " at " + scale_text(result.scale_num) +
                 " -> " + std::to_string(result.width) + "x" + std::to_string(result.height));
}

void BM_WholeDecodeInto(benchmark::State& state) {
  const std::size_t which = static_cast<std::size_t>(state.range(0));
  const LoadedJpeg* loaded = jpeg_or_skip(state);
  if (loaded == nullptr) return;
  const LoadedJpeg& jpeg = *loaded;
  const int width = jpeg.info.width, height = jpeg.info.height;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(width) * height * 3);
  for (auto _ : state) {
    decode_jpeg_into(jpeg.bytes, out.data(), width, height);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(kJpegs[which].name) + " whole " + std::to_string(width) + "x" +
                 std::to_string(height));
}

void BM_WholeDecodeScaled(benchmark::State& state) {
  const std::size_t which = static_cast<std::size_t>(state.range(0));
  const int scale_num = static_cast<int>(state.range(1));
  const LoadedJpeg* loaded = jpeg_or_skip(state);
  if (loaded == nullptr) return;
  const LoadedJpeg& jpeg = *loaded;
  const auto scaled = [&](int size) {
    return (size * scale_num + kDctScaleDenominator - 1) / kDctScaleDenominator;
  };
  const JpegDecodeOptions options{.fast_dct = true,
                                  .min_width = scaled(jpeg.info.width),
                                  .min_height = scaled(jpeg.info.height)};
  int width = 0, height = 0;
  for (auto _ : state) {
    const RgbImage image = decode_jpeg(jpeg.bytes, options);
    benchmark::DoNotOptimize(image.pixels.data());
    width = image.width;
    height = image.height;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["scale"] = static_cast<double>(scale_num) / kDctScaleDenominator;
  state.SetLabel(std::string(kJpegs[which].name) + " whole at " + scale_text(scale_num) + " -> " +
                 std::to_string(width) + "x" + std::to_string(height));
}

// A 224x224x3 uint8 image of noise (neither operation's cost depends on the pixel values).
TensorState image_state() { return {DType::parse("|u1"), {224, 224, 3}}; }

std::vector<std::uint8_t> noise_image() {
  std::vector<std::uint8_t> pixels(image_state().byte_size());
  std::mt19937 rng(3);
  for (std::uint8_t& p : pixels) p = static_cast<std::uint8_t>(rng() & 255);
  return pixels;
}

// Runs `operation` on the noise image, one sample index per call.
void run_operation(benchmark::State& state, Operation& operation) {
  const TensorState input = image_state();
  const TensorState output = operation.declare(input);
  const std::vector<std::uint8_t> in = noise_image();
  std::vector<std::uint8_t> out(output.byte_size());
  std::vector<std::uint8_t> scratch(operation.scratch_bytes());
  SampleContext context;
  context.epoch_key = SampleContext::make_epoch_key(0, 0);
  for (auto _ : state) {
    operation.apply(in.data(), out.data(), scratch, context);
    ++context.index;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(in.size()));
  state.SetLabel(input.to_string() + " -> " + output.to_string());
}

void BM_FlipOp(benchmark::State& state) {
  const auto flip = OpRegistry::global().make_operation("random_horizontal_flip", {});
  run_operation(state, *flip);
}

void BM_NormalizeOp(benchmark::State& state) {
  const std::string dtype = state.range(0) == 32 ? "float32" : "float16";
  // ImageNet's mean and standard deviation on the 0-255 scale.
  const auto normalize = OpRegistry::global().make_operation(
      "normalize", OpParams()
                       .set("mean", std::vector<double>{0.485 * 255, 0.456 * 255, 0.406 * 255})
                       .set("std", std::vector<double>{0.229 * 255, 0.224 * 255, 0.225 * 255})
                       .set("dtype", dtype));
  run_operation(state, *normalize);
}

// A one-sample dataset holding the 4:2:0 photograph twice, as the writer stores JPEGs: field
// "small" at most 512 px (ImageNet-like), field "full" at its full size.
struct CropFixture {
  std::unique_ptr<Reader> reader;
  std::string error;
};

const CropFixture& crop_fixture() {
  static const CropFixture fixture = [] {
    CropFixture result;
    const LoadedJpeg& jpeg = load_jpeg(0);
    if (!jpeg.error.empty()) {
      result.error = jpeg.error;
      return result;
    }
    struct Source final : SampleSource {
      explicit Source(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}
      std::uint64_t size() const override { return 1; }
      std::vector<FieldValue> load(std::uint64_t) const override {
        return {JpegFile{bytes_}, JpegFile{bytes_}};
      }
      const std::vector<std::uint8_t>& bytes_;
    };
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("ffcv-micro-image-kernels-" + std::to_string(::getpid()) + ".beton"))
                                 .string();
    try {
      RgbImageOptions small{.write_mode = ImageWriteMode::kJpg, .max_resolution = 512};
      RgbImageOptions full{.write_mode = ImageWriteMode::kJpg};
      WriterOptions options;
      options.num_workers = 1;
      DatasetWriter(path,
                    {{"small", std::make_shared<RgbImageField>(small)},
                     {"full", std::make_shared<RgbImageField>(full)}},
                    options)
          .write(Source(jpeg.bytes));
      result.reader = std::make_unique<Reader>(path);
    } catch (const std::exception& e) {
      result.error = std::string("cannot build the dataset: ") + e.what();
    }
    std::error_code ignored;
    std::filesystem::remove(path, ignored);  // the reader keeps its mapping
    return result;
  }();
  return fixture;
}

// Runs `decoder` on stored sample 0 of `field`, `calls` times per item with a new crop each
// call; items/s are samples/s.
void run_crop_decoder(benchmark::State& state, const std::shared_ptr<Decoder>& decoder,
                      std::size_t field, int calls, const std::string& label) {
  const CropFixture& fixture = crop_fixture();
  if (!fixture.error.empty()) {
    state.SkipWithError(fixture.error.c_str());
    return;
  }
  const Reader& reader = *fixture.reader;
  const TensorState output = decoder->declare(reader, field);
  std::vector<std::uint8_t> out(output.byte_size());
  std::vector<std::uint8_t> scratch(decoder->scratch_bytes());
  const std::uint8_t* column = reader.column(0, field);
  SampleContext context;
  context.epoch_key = SampleContext::make_epoch_key(0, 0);
  for (auto _ : state) {
    for (int call = 0; call < calls; ++call) {
      decoder->decode(column, reader, out.data(), scratch, context);
      ++context.index;  // a new crop every call
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  const ImageMetadata stored = ImageMetadata::load(column);
  state.SetLabel(reader.fields()[field].name + " " + std::to_string(stored.width) + "x" +
                 std::to_string(stored.height) + " -> " + label);
}

void BM_RandomResizedCrop(benchmark::State& state) {
  const std::int64_t size = state.range(1);
  run_crop_decoder(
      state, OpRegistry::global().make_decoder("random_resized_crop", OpParams().set("size", size)),
      static_cast<std::size_t>(state.range(0)), 1, std::to_string(size));
}

// Multi-view: V crops of 160 px per sample, as V separate random_resized_crop decodes (arg 0) or
// as one random_resized_crops decode of the union window (arg 1).
void BM_CropViews(benchmark::State& state) {
  const std::int64_t views = state.range(0);
  const bool shared = state.range(1) == 1;
  const auto decoder = shared
                           ? OpRegistry::global().make_decoder(
                                 "random_resized_crops",
                                 OpParams().set("size", std::int64_t{160}).set("views", views))
                           : OpRegistry::global().make_decoder(
                                 "random_resized_crop", OpParams().set("size", std::int64_t{160}));
  run_crop_decoder(
      state, decoder, 0, shared ? 1 : static_cast<int>(views),
      std::to_string(views) + " x 160, " + (shared ? "one decode" : "one decode each"));
}

}  // namespace

BENCHMARK(BM_WindowDecode)->ArgsProduct({{0, 1}, {1, 2, 4, 8}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WholeDecodeInto)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WholeDecodeScaled)->ArgsProduct({{0, 1}, {1, 2, 4, 8}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlipOp)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NormalizeOp)->Arg(32)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RandomResizedCrop)->ArgsProduct({{0, 1}, {160, 224}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CropViews)->ArgsProduct({{2, 4}, {0, 1}})->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
