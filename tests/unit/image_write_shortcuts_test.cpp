// The image field's write shortcuts (rgb_image_field.hpp): source JPEGs kept as they came, the
// reading of a JPEG's coding and quality (jpeg_coding.hpp), DCT-scaled decoding with the SIMD
// area resampler, and same_as_ffcv, which turns both off to encode as FFCV's writer does.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include <opencv2/imgproc.hpp>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/image/jpeg_coding.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::FunctionSource;
using test::TempDir;

namespace {

// Detail at several scales, as photographs have: smooth waves of several frequencies and
// hard-edged blocks, so that a wrong filter or a shifted sampling grid shows.
RgbImage textured_image(int width, int height, std::uint64_t seed) {
  RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double u = double(x) / width, v = double(y) / height;
      const double waves =
          60 * std::sin(9 * u + seed) + 40 * std::sin(23 * v + 2 * u) + 25 * std::sin(71 * (u + v));
      const bool block = ((x / 37) + (y / 29) + int(seed)) % 3 == 0;
      std::uint8_t* p = &image.pixels[(std::size_t(y) * width + x) * 3];
      for (int c = 0; c < 3; ++c) {
        const double value = 128 + waves * (1 - 0.3 * c) + (block ? 45 : -45);
        p[c] = static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
      }
    }
  }
  return image;
}

struct Written {
  std::vector<std::vector<std::uint8_t>> payloads;  // each sample's stored bytes
  std::vector<ImageMetadata> metadata;
  WriteSummary summary;
};

// Writes `sources` (one JPEG file each) into one image field at `path` (a temporary file when
// empty) and reads back what was stored.
Written write_jpegs(const std::vector<std::vector<std::uint8_t>>& sources,
                    const RgbImageOptions& options, std::string path = "") {
  TempDir dir;
  if (path.empty()) path = dir.file("images.beton");
  WriterOptions writer_options;
  writer_options.num_workers = 2;
  Written written;
  written.summary =
      DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(options)}}, writer_options)
          .write(FunctionSource(sources.size(), [&](std::uint64_t i) {
            return std::vector<FieldValue>{JpegFile{sources[i]}};
          }));
  const Reader reader(path);
  for (std::uint64_t i = 0; i < sources.size(); ++i) {
    const ImageMetadata metadata = ImageMetadata::load(reader.column(i, 0));
    const auto payload =
        metadata.mode == StoredImageMode::kRaw
            ? reader.payload(metadata.data_ptr, std::uint64_t{metadata.width} * metadata.height * 3)
            : reader.payload(metadata.data_ptr);
    written.payloads.emplace_back(payload.begin(), payload.end());
    written.metadata.push_back(metadata);
  }
  return written;
}

RgbImageOptions jpg_options(int quality, std::optional<int> max_resolution = std::nullopt) {
  RgbImageOptions options;
  options.write_mode = ImageWriteMode::kJpg;
  options.jpeg_quality = quality;
  options.max_resolution = max_resolution;
  return options;
}

// FFCV's path for one source JPEG: full decode with the accurate IDCT, then OpenCV INTER_AREA.
RgbImage ffcv_pixels(const std::vector<std::uint8_t>& jpeg, int width, int height) {
  const RgbImage full = decode_jpeg(jpeg, {.fast_dct = false});
  if (full.width == width && full.height == height) return full;
  RgbImage out{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3)};
  cv::resize(
      cv::Mat(full.height, full.width, CV_8UC3, const_cast<std::uint8_t*>(full.pixels.data())),
      cv::Mat(height, width, CV_8UC3, out.pixels.data()), cv::Size(width, height), 0, 0,
      cv::INTER_AREA);
  return out;
}

int max_difference(const RgbImage& a, const RgbImage& b) {
  int worst = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) {
    worst = std::max(worst, std::abs(int(a.pixels[i]) - int(b.pixels[i])));
  }
  return worst;
}

std::uint64_t outcome(const WriteSummary& summary, ReencodeReason reason) {
  return summary.tally.stored_jpegs[static_cast<int>(reason)];
}

}  // namespace

TEST_CASE("a JPEG's quality is read from its tables exactly for libjpeg's encodes",
          "[image_write][jpeg_coding]") {
  const RgbImage image = textured_image(96, 64, 1);
  for (int quality = 5; quality <= 100; quality += 5) {
    const JpegCoding coding = read_jpeg_coding(encode_jpeg(image, quality));
    CHECK(estimate_jpeg_quality(coding) == quality);
    CHECK(coding.width == 96);
    CHECK(coding.height == 64);
    CHECK(coding.ycbcr);
    CHECK(coding.chroma_420);
    CHECK_FALSE(coding.progressive);
    CHECK(coding.luma_table == ijg_quant_table(quality, false));
    CHECK(quantised_at_most_as_finely_as(coding, quality));
    CHECK(quantised_at_most_as_finely_as(coding, std::min(quality + 1, 100)));
    if (quality > 5) CHECK_FALSE(quantised_at_most_as_finely_as(coding, quality - 5));
  }
  const JpegCoding progressive =
      read_jpeg_coding(encode_jpeg(image, {.quality = 80, .progressive = true}));
  CHECK(progressive.progressive);
  CHECK(estimate_jpeg_quality(progressive) == 80);
  const JpegCoding full_chroma = read_jpeg_coding(
      encode_jpeg(image, {.quality = 80, .chroma = JpegEncodeOptions::Chroma::k444}));
  CHECK_FALSE(full_chroma.chroma_420);
  const JpegCoding gray = read_jpeg_coding(
      encode_jpeg(image, {.quality = 80, .chroma = JpegEncodeOptions::Chroma::kGray}));
  CHECK(gray.components == 1);
  CHECK_FALSE(gray.ycbcr);
  CHECK_THROWS_AS(read_jpeg_coding(std::vector<std::uint8_t>{1, 2, 3}), EncodeError);
}

TEST_CASE("a source JPEG that needs no change is stored byte for byte, the others again",
          "[image_write]") {
  const RgbImage image = textured_image(160, 120, 2);
  const std::vector<std::vector<std::uint8_t>> sources = {
      encode_jpeg(image, 80),                                    // kept
      encode_jpeg(image, 90),                                    // kept: the target's own tables
      encode_jpeg(image, 95),                                    // finer than 90
      encode_jpeg(image, {.quality = 75, .progressive = true}),  // kept: progressive is read
      encode_jpeg(image, {.quality = 75, .chroma = JpegEncodeOptions::Chroma::k444}),
      encode_jpeg(image, {.quality = 75, .chroma = JpegEncodeOptions::Chroma::kGray}),
      encode_jpeg(textured_image(400, 300, 3), 70),  // larger than max_resolution: resized
  };
  const Written written = write_jpegs(sources, jpg_options(90, 200));
  for (const std::size_t kept : {0, 1, 3}) {
    INFO("source " << kept);
    CHECK(written.payloads[kept] == sources[kept]);
    CHECK(written.metadata[kept].width == 160);
    CHECK(written.metadata[kept].height == 120);
  }
  for (const std::size_t again : {2, 4, 5, 6}) {
    INFO("source " << again);
    CHECK(written.payloads[again] != sources[again]);
    CHECK(written.metadata[again].mode == StoredImageMode::kJpg);
    CHECK(estimate_jpeg_quality(read_jpeg_coding(written.payloads[again])) == 90);
  }
  CHECK(written.metadata[6].width == 200);
  CHECK(written.metadata[6].height == 150);
  const WriteSummary& summary = written.summary;
  CHECK(summary.tally.kept_as_is() == 3);
  CHECK(outcome(summary, ReencodeReason::kFinerQuality) == 1);
  CHECK(outcome(summary, ReencodeReason::kLayout) == 2);
  CHECK(outcome(summary, ReencodeReason::kResized) == 1);
  CHECK(summary.tally.check_seconds > 0);
}

TEST_CASE("kept JPEGs are stored only when intact, and only where the mode stores JPEG",
          "[image_write]") {
  const std::vector<std::uint8_t> good = encode_jpeg(textured_image(160, 120, 4), 80);
  std::vector<std::uint8_t> truncated(good.begin(), good.begin() + good.size() * 2 / 3);
  CHECK_THROWS_WITH(write_jpegs({truncated}, jpg_options(90)),
                    Catch::Contains("sample 0") && Catch::Contains("JPEG"));

  RgbImageOptions raw;
  raw.write_mode = ImageWriteMode::kRaw;
  const Written as_pixels = write_jpegs({good}, raw);
  CHECK(as_pixels.metadata[0].mode == StoredImageMode::kRaw);
  CHECK(as_pixels.payloads[0] == decode_jpeg(good, {.fast_dct = false}).pixels);
  CHECK(as_pixels.summary.tally.kept_as_is() == 0);
}

TEST_CASE("same_as_ffcv encodes every JPEG again from FFCV's decode and INTER_AREA, bit for bit",
          "[image_write]") {
  const std::vector<std::vector<std::uint8_t>> sources = {
      encode_jpeg(textured_image(160, 120, 5), 80),  // would be kept
      encode_jpeg(textured_image(900, 600, 6), 90),  // 4.5x the target: would be DCT-scaled
      encode_jpeg(textured_image(333, 250, 7), 85),  // a non-integer ratio
  };
  RgbImageOptions options = jpg_options(90, 200);
  options.same_as_ffcv = true;
  const Written jpg = write_jpegs(sources, options);
  options.write_mode = ImageWriteMode::kRaw;
  const Written raw = write_jpegs(sources, options);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("source " << i);
    const RgbImage reference =
        ffcv_pixels(sources[i], raw.metadata[i].width, raw.metadata[i].height);
    CHECK(raw.payloads[i] == reference.pixels);
    CHECK(jpg.payloads[i] == encode_jpeg(reference, 90));
  }
  CHECK(jpg.summary.tally.kept_as_is() == 0);
  CHECK(outcome(jpg.summary, ReencodeReason::kSameAsFfcv) == 3);
  CHECK(raw.summary.tally.dct_scaled == 0);
}

TEST_CASE("the fast path stays within a stated bound of FFCV's decode and INTER_AREA",
          "[image_write]") {
  // Without DCT scaling only the resampler differs: within 1 level everywhere (resize.hpp).
  // With it, libjpeg's DCT-domain reduction replaces part of the area filter, which shows on
  // hard edges: on this content the bound is 30 dB PSNR and 40 levels for any one value
  // (measured 32-49 dB and at most 31). On photographs the agreement is closer: 45.4 dB on
  // average over 2,000 ImageNet-like images written at 128 px (docs/operations.md).
  RgbImageOptions options;
  options.max_resolution = 128;
  const std::vector<std::pair<int, int>> sizes = {{200, 150}, {256, 192},  {300, 200},
                                                  {600, 450}, {1200, 800}, {1100, 1400}};
  std::vector<std::vector<std::uint8_t>> sources;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    sources.push_back(encode_jpeg(textured_image(sizes[i].first, sizes[i].second, i), 92));
  }
  const Written written = write_jpegs(sources, options);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const ImageMetadata& metadata = written.metadata[i];
    const RgbImage ours{metadata.width, metadata.height, written.payloads[i]};
    const RgbImage reference = ffcv_pixels(sources[i], metadata.width, metadata.height);
    const bool scaled = sizes[i].first >= 2 * 128 || sizes[i].second >= 2 * 128;
    INFO(sizes[i].first << "x" << sizes[i].second << ": PSNR " << test::psnr(ours, reference)
                        << " dB, largest difference " << max_difference(ours, reference));
    if (!scaled) {
      CHECK(max_difference(ours, reference) <= 1);
    } else {
      CHECK(test::psnr(ours, reference) > 30.0);
      CHECK(max_difference(ours, reference) <= 40);
    }
  }
  CHECK(written.summary.tally.dct_scaled == 5);
}

TEST_CASE("kept progressive JPEGs load exactly as their baseline twins", "[image_write]") {
  // Progressive coding reorders the same quantised coefficients: a progressive and a baseline
  // encode with the same tables decode to the same pixels, so the loader's random-resized-crop
  // batches over the two kept sets must be equal, window decoding of progressive files included.
  TempDir dir;
  std::vector<std::vector<std::uint8_t>> baseline, progressive;
  for (int i = 0; i < 12; ++i) {
    const RgbImage image = textured_image(120 + 8 * i, 100 + 4 * i, i);
    baseline.push_back(encode_jpeg(image, 80));
    progressive.push_back(encode_jpeg(image, {.quality = 80, .progressive = true}));
  }
  const Written kept_baseline = write_jpegs(baseline, jpg_options(90), dir.file("b.beton"));
  const Written kept_progressive = write_jpegs(progressive, jpg_options(90), dir.file("p.beton"));
  REQUIRE(kept_baseline.summary.tally.kept_as_is() == 12);
  REQUIRE(kept_progressive.summary.tally.kept_as_is() == 12);
  CHECK(kept_progressive.payloads == progressive);
  const auto batches = [](const std::string& path) {
    LoaderOptions options;
    options.batch_size = 4;
    options.order.seed = 3;
    Loader loader(path,
                  {{"image",
                    "image",
                    OpRegistry::global().make_decoder("random_resized_crop",
                                                      OpParams({{"size", std::int64_t{48}}})),
                    {}}},
                  options);
    std::vector<std::uint8_t> all;
    auto epoch = loader.epoch(0);
    while (auto batch = epoch.next()) {
      const BatchTensor images = batch->output("image");
      all.insert(all.end(), images.data, images.data + batch->size() * 48 * 48 * 3);
    }
    return all;
  };
  const std::vector<std::uint8_t> from_baseline = batches(dir.file("b.beton"));
  CHECK(from_baseline.size() == 12u * 48 * 48 * 3);
  CHECK(batches(dir.file("p.beton")) == from_baseline);
}

TEST_CASE("a frame naming a quantisation table that does not exist is a bad image, not a crash",
          "[image_write][jpeg_coding]") {
  // libjpeg reads the frame header's table numbers without checking them; the writer reads the
  // tables right after the headers to decide whether to keep the file.
  std::vector<std::uint8_t> jpeg = encode_jpeg(textured_image(64, 48, 7), 80);
  std::size_t sof = 0;
  for (std::size_t i = 2; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      sof = i;
      break;
    }
  }
  REQUIRE(sof > 0);
  // SOF0: marker, length (2), precision, height (2), width (2), count, then (id, sampling, Tq).
  jpeg[sof + 2 + 2 + 1 + 2 + 2 + 1 + 2] = 26;  // the first component's table number
  const JpegCoding coding = read_jpeg_coding(jpeg);
  CHECK(coding.luma_table == QuantTable{});
  CHECK_THROWS_AS(write_jpegs({jpeg}, jpg_options(90)), EncodeError);
}

TEST_CASE("a JPEG's stream ends at its end-of-image marker, not at a thumbnail's",
          "[image_write]") {
  const RgbImage image = textured_image(96, 64, 5);
  for (const auto& jpeg : {encode_jpeg(image, 80), encode_jpeg(image, {.progressive = true})}) {
    CHECK(jpeg_stream_end(jpeg) == jpeg.size());
    std::vector<std::uint8_t> padded = jpeg;
    padded.insert(padded.end(), {0xFF, 0xD9, 0, 0, 0xFF, 0xD8, 7});  // bytes after the end
    CHECK(jpeg_stream_end(padded) == jpeg.size());
    // An APP1 segment holding a whole thumbnail (its own SOI ... EOI) right after the SOI.
    const std::vector<std::uint8_t> thumbnail = encode_jpeg(textured_image(16, 16, 1), 50);
    const std::size_t length = thumbnail.size() + 2;
    std::vector<std::uint8_t> with_thumbnail = {0xFF,
                                                0xD8,
                                                0xFF,
                                                0xE1,
                                                static_cast<std::uint8_t>(length >> 8),
                                                static_cast<std::uint8_t>(length & 0xFF)};
    with_thumbnail.insert(with_thumbnail.end(), thumbnail.begin(), thumbnail.end());
    with_thumbnail.insert(with_thumbnail.end(), jpeg.begin() + 2, jpeg.end());
    CHECK(jpeg_stream_end(with_thumbnail) == with_thumbnail.size());
    // No end marker (a truncated file): the whole, for decoding to judge.
    const std::vector<std::uint8_t> cut(jpeg.begin(), jpeg.end() - 10);
    CHECK(jpeg_stream_end(cut) == cut.size());
  }
}

TEST_CASE("a kept JPEG is stored without the bytes after its end, and verify finds such bytes",
          "[image_write]") {
  TempDir dir;
  const std::vector<std::uint8_t> jpeg = encode_jpeg(textured_image(160, 120, 6), 80);
  std::vector<std::uint8_t> with_tail = jpeg;
  with_tail.resize(jpeg.size() + 300000, 0x5A);  // another file appended to the image
  const std::string path = dir.file("tail.beton");
  const Written written = write_jpegs({with_tail, jpeg}, jpg_options(90), path);
  CHECK(written.summary.tally.kept_as_is() == 2);
  CHECK(written.payloads[0] == jpeg);  // 300 KB shorter than the source
  std::string out;
  REQUIRE(test::run_cli("inspect " + path + " --verify", out) == 0);

  // A file whose last payload runs on past the image's end (as one written before such bytes
  // were cut): its allocation grown into the rest of its page.
  std::vector<std::uint8_t> bytes = test::read_file(path);
  const Reader reader(path);
  const std::uint64_t table = reader.header().alloc_table_ptr;
  const auto u64_at = [&](std::uint64_t at) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes.data() + at, 8);
    return value;
  };
  std::uint64_t last = 0;
  for (std::uint64_t k = 1; k < (bytes.size() - table) / 24; ++k) {
    if (u64_at(table + k * 24 + 8) > u64_at(table + last * 24 + 8)) last = k;
  }
  const std::uint64_t ptr = u64_at(table + last * 24 + 8);
  const std::uint64_t size = u64_at(table + last * 24 + 16) + 64;
  REQUIRE(ptr + size <= table);
  REQUIRE(ptr / reader.page_size() == (ptr + size - 1) / reader.page_size());
  std::memcpy(bytes.data() + table + last * 24 + 16, &size, 8);
  test::write_file(dir.file("grown.beton"), bytes);
  CHECK(test::run_cli("inspect " + dir.file("grown.beton") + " --verify", out) == 1);
  CHECK_THAT(out, Catch::Contains("64 bytes after the JPEG's end-of-image marker"));
}
