// Writes the seed corpora of the fuzz harnesses under OUT/<harness>/, from the project's own
// writers and files: .beton files of every field type and image storage (and Python FFCV's
// golden files), JPEGs of every chroma layout with window parameters, the built-in steps'
// specifications, the shipped recipes, and IDX, .npy and image files for the sources.
//
//   ffcv_fuzz_seeds OUT
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/format/npy_array.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "sources/idx_source.hpp"

namespace fs = std::filesystem;
using namespace ffcv;

namespace {

using ByteVector = std::vector<std::uint8_t>;

void write_bytes(const fs::path& path, const ByteVector& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw IoError(path.string(), "write", errno);
}

ByteVector read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return ByteVector((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

RgbImage pattern(int width, int height, int seed) {
  RgbImage image{width, height, ByteVector(std::size_t(width) * height * 3)};
  for (std::size_t k = 0; k < image.pixels.size(); ++k) {
    image.pixels[k] = static_cast<std::uint8_t>((k * 7 + seed * 31 + (k / 3 % width) * 5) % 256);
  }
  return image;
}

class Samples final : public SampleSource {
 public:
  using Make = std::function<std::vector<FieldValue>(std::uint64_t)>;
  Samples(std::uint64_t count, Make make) : count_(count), make_(std::move(make)) {}
  std::uint64_t size() const override { return count_; }
  std::vector<FieldValue> load(std::uint64_t index) const override { return make_(index); }
  std::string describe(std::uint64_t index) const override { return std::to_string(index); }

 private:
  std::uint64_t count_;
  Make make_;
};

void beton_seeds(const fs::path& dir, const fs::path& source_dir) {
  WriterOptions options;
  options.page_size = 2u << 20;
  options.num_workers = 1;
  const DType f4 = DType::parse("<f4");
  DatasetWriter((dir / "all_fields.beton").string(),
                {{"label", std::make_shared<IntField>()},
                 {"weight", std::make_shared<FloatField>()},
                 {"vector", std::make_shared<NdArrayField>(f4, std::vector<std::uint64_t>{3})},
                 {"blob", std::make_shared<BytesField>()},
                 {"meta", std::make_shared<JsonField>()}},
                options)
      .write(Samples(3, [&](std::uint64_t i) {
        ByteVector vector(12, std::uint8_t(i));
        return std::vector<FieldValue>{std::int64_t(i), 0.5 * double(i), NdArray{f4, {3}, vector},
                                       Bytes(i + 1, 0xab),
                                       JsonText{"{\"i\": " + std::to_string(i) + "}"}};
      }));
  // Variable-length rows: boxes and labels, 0 to 3 rows a sample.
  DatasetWriter((dir / "ragged.beton").string(),
                {{"boxes", std::make_shared<RaggedNdArrayField>(f4, std::vector<std::uint64_t>{4})},
                 {"labels", std::make_shared<RaggedNdArrayField>(DType::parse("<i8"),
                                                                 std::vector<std::uint64_t>{})}},
                options)
      .write(Samples(4, [&](std::uint64_t i) {
        const std::vector<float> boxes(4 * i, 1.5f * float(i));
        const std::vector<std::int64_t> labels(i, std::int64_t(i));
        const auto* b = reinterpret_cast<const std::uint8_t*>(boxes.data());
        const auto* l = reinterpret_cast<const std::uint8_t*>(labels.data());
        return std::vector<FieldValue>{NdArray{f4, {i, 4}, ByteVector(b, b + 16 * i)},
                                       NdArray{DType::parse("<i8"), {i}, ByteVector(l, l + 8 * i)}};
      }));
  for (const auto& [name, mode] : {std::pair{"raw_images.beton", ImageWriteMode::kRaw},
                                   std::pair{"jpg_images.beton", ImageWriteMode::kJpg}}) {
    RgbImageOptions image_options;
    image_options.write_mode = mode;
    DatasetWriter((dir / name).string(),
                  {{"image", std::make_shared<RgbImageField>(image_options)},
                   {"label", std::make_shared<IntField>()}},
                  options)
        .write(Samples(3, [](std::uint64_t i) {
          return std::vector<FieldValue>{pattern(8 + 4 * int(i), 6 + 2 * int(i), int(i)),
                                         std::int64_t(i)};
        }));
  }
  // Python FFCV's own files (tests/golden), unpacked.
  for (const char* golden : {"py_scalars.beton.gz", "py_images.beton.gz"}) {
    const fs::path path = source_dir / "tests/golden" / golden;
    if (fs::exists(path)) {
      write_bytes(dir / fs::path(golden).stem(), tools::read_maybe_gzipped(path.string()));
    }
  }
}

void jpeg_seeds(const fs::path& dir) {
  using Chroma = JpegEncodeOptions::Chroma;
  int n = 0;
  for (const auto& [width, height] : {std::pair{8, 8}, std::pair{33, 17}, std::pair{64, 48}}) {
    for (const Chroma chroma : {Chroma::k420, Chroma::k444, Chroma::kGray}) {
      for (const bool progressive : {false, true}) {
        const ByteVector jpeg =
            encode_jpeg(pattern(width, height, n),
                        {.quality = 80, .chroma = chroma, .progressive = progressive});
        // Window parameters (jpeg_fuzz.cpp): a different crop and scale for each seed.
        const std::uint8_t k = static_cast<std::uint8_t>(n);
        const std::array<std::uint8_t, 12> params = {std::uint8_t(k * 17),
                                                     std::uint8_t(k * 29),
                                                     200,
                                                     180,
                                                     std::uint8_t(k * 13),
                                                     std::uint8_t(k * 11),
                                                     k,
                                                     std::uint8_t(k / 2),
                                                     k,
                                                     32,
                                                     k,
                                                     0};
        ByteVector input(params.begin(), params.end());
        input.resize(params.size() + jpeg.size());
        std::copy(jpeg.begin(), jpeg.end(), input.begin() + params.size());
        write_bytes(dir / ("seed" + std::to_string(n++) + ".bin"), input);
      }
    }
  }
}

void op_spec_seeds(const fs::path& dir) {
  std::vector<std::string> specs = {
      "random_resized_crop:size=32,scale=[0.08,1],ratio=[0.75,1.333]",
      "center_crop:size=32,ratio=0.875",
      "normalize:mean=[1,2,3],std=[4,5,6]",
      "cutout:size=8",
      "random_translate:padding=4",
      "convert:dtype=float16",
      "unpack_bits:count=13,dtype=uint8",
      "mixup:alpha=0.2,same_lambda=true",
      "poison:mask=[1,2,3],alpha=[0.5],indices=[0,1],clamp=[0,255]",
  };
  const OpRegistry& registry = OpRegistry::global();
  for (const auto& [name, summary] : registry.operations()) specs.push_back(name);
  for (const auto& [name, summary] : registry.batch_operations()) specs.push_back(name);
  for (const auto& [name, summary] : registry.decoders()) specs.push_back(name);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    write_bytes(dir / ("spec" + std::to_string(i) + ".txt"),
                ByteVector(specs[i].begin(), specs[i].end()));
  }
}

void recipe_seeds(const fs::path& dir, const fs::path& source_dir) {
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(source_dir / "recipes")) {
    if (entry.path().extension() != ".toml") continue;
    ByteVector text = read_bytes(entry.path());
    const std::string as_text(text.begin(), text.end());
    if (as_text.find("[saga]") != std::string::npos) continue;  // another recipe kind
    write_bytes(dir / ("recipe" + std::to_string(n++) + ".toml"), text);
    const std::string overrides = "\n#--\ntraining.epochs=3\nlr.lr=0.5\ndata.order=random\n";
    text.insert(text.end(), overrides.begin(), overrides.end());
    write_bytes(dir / ("recipe" + std::to_string(n++) + ".toml"), text);
  }
}

// Two files as sources_fuzz.cpp takes them: kind, option, the first file's length, the files.
ByteVector two_files(std::uint8_t kind, const ByteVector& first, const ByteVector& second,
                     bool option = false) {
  ByteVector input = {kind, std::uint8_t(option), std::uint8_t(first.size() & 0xff),
                      std::uint8_t(first.size() >> 8)};
  input.insert(input.end(), first.begin(), first.end());
  input.insert(input.end(), second.begin(), second.end());
  return input;
}

ByteVector npy_bytes(const fs::path& scratch, const NpyArray& array) {
  write_npy(scratch.string(), array);
  return read_bytes(scratch);
}

void source_seeds(const fs::path& dir) {
  // IDX: 3 images of 4x5 (magic 0x00000803) and their labels (0x00000801).
  ByteVector images = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5};
  for (int k = 0; k < 60; ++k) images.push_back(std::uint8_t(k * 4));
  const ByteVector labels = {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3};
  write_bytes(dir / "idx.bin", two_files(0, images, labels));
  // .npy: float32 features (3, 4) with int64 targets; bool features (3, 10) packed.
  const fs::path scratch = dir / "scratch.npy";
  const ByteVector features =
      npy_bytes(scratch, {DType::parse("<f4"), {3, 4}, ByteVector(48, 0x3f)});
  const ByteVector targets = npy_bytes(scratch, {DType::parse("<i8"), {3}, ByteVector(24, 1)});
  const ByteVector bools = npy_bytes(scratch, {DType::parse("|b1"), {3, 10}, ByteVector(30, 1)});
  fs::remove(scratch);
  write_bytes(dir / "npy_dense.bin", two_files(1, features, targets));
  write_bytes(dir / "npy_packed.bin", two_files(1, bools, targets, true));
  // An image file: a JPEG.
  ByteVector jpeg_input = {2, 0, 0, 0};
  const ByteVector jpeg = encode_jpeg(pattern(16, 12, 3), 85);
  jpeg_input.insert(jpeg_input.end(), jpeg.begin(), jpeg.end());
  write_bytes(dir / "image_jpeg.bin", jpeg_input);
  // A 2x2 24-bit BMP (OpenCV decodes it where imgcodecs is built).
  ByteVector bmp = {'B', 'M', 70, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0,  0,
                    2,   0,   0,  0, 2, 0, 0, 0, 1, 0, 24, 0, 0, 0, 0,  0, 16, 0,
                    0,   0,   0,  0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0,  0, 0,  0};
  for (int k = 0; k < 16; ++k) bmp.push_back(std::uint8_t(k * 16));
  ByteVector bmp_input = {2, 0, 0, 0};
  bmp_input.insert(bmp_input.end(), bmp.begin(), bmp.end());
  write_bytes(dir / "image_bmp.bin", bmp_input);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ffcv_fuzz_seeds OUT\n");
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path source_dir = FFCV_SOURCE_DIR;
  try {
    for (const char* harness : {"beton", "jpeg", "op_spec", "sources", "recipe"}) {
      fs::create_directories(out / harness);
    }
    beton_seeds(out / "beton", source_dir);
    jpeg_seeds(out / "jpeg");
    op_spec_seeds(out / "op_spec");
    recipe_seeds(out / "recipe", source_dir);
    source_seeds(out / "sources");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ffcv_fuzz_seeds: %s\n", error.what());
    return 1;
  }
  std::printf("seed corpora written under %s\n", out.c_str());
  return 0;
}
