// `ffcv doctor`'s verdict as a function of what it measured (cli/doctor_verdict.hpp): a
// measurement too short gives "unsure", and no advice is given that the figures rule out; and,
// end to end, the doctor measures long enough for a verdict.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/doctor_verdict.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/util/cpu_count.hpp"
#include "test_support.hpp"

using namespace ffcv;
using namespace ffcv::tools;

namespace {

// Four seconds of 400 batches on 4 workers of 4 cores: the consumer waited 60% of the time, the
// workers were busy 30% of theirs, never for pages, and never held by a full ring.
LoaderFigures idle_workers() {
  LoaderFigures f;
  f.seconds = 4;
  f.batches = 400;
  f.batches_per_epoch = 1000;
  f.workers = 4;
  f.cores = 4;
  f.process_seconds = 0.3 * 4 * 4;
  f.consumer_wait_seconds = 0.6 * 4;
  f.file_size = 1 << 20;
  f.available_memory = 1ull << 33;
  return f;
}

bool advises(const Diagnosis& d, const std::string& text) {
  return std::any_of(d.advice.begin(), d.advice.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE(
    "the doctor never advises a deeper ring that was never full, nor workers beyond the cores",
    "[doctor]") {
  LoaderFigures f = idle_workers();
  Diagnosis d = diagnose_loader(f);
  CHECK(d.bottleneck == "workers");
  CHECK_FALSE(advises(d, "--batches-ahead"));
  CHECK_FALSE(advises(d, "--num-workers"));
  // Some advice still says why none of the settings is indicated.
  REQUIRE(d.advice.size() == 1);
  CHECK_THAT(d.advice[0], Catch::Contains("no loader setting is indicated"));

  // The ring full a fifth of the workers' time: a deeper one helps.
  f.ring_full_seconds = 0.2 * 4 * 4;
  d = diagnose_loader(f);
  CHECK(d.bottleneck == "workers");
  CHECK(advises(d, "raise --batches-ahead"));
  CHECK_FALSE(advises(d, "--num-workers"));
  // Below kRingFullShare it does not.
  f.ring_full_seconds = 0.5 * kRingFullShare * 4 * 4;
  CHECK_FALSE(advises(diagnose_loader(f), "--batches-ahead"));

  // Fewer workers than cores: more workers may help.
  f = idle_workers();
  f.workers = 2;
  f.process_seconds = 0.3 * 2 * 4;
  d = diagnose_loader(f);
  CHECK(d.bottleneck == "workers");
  CHECK(advises(d, "raise --num-workers"));
  CHECK(advises(d, "2 of 4 cores"));
}

TEST_CASE("a cpu-bound loader with a worker on every core is not told to use more workers",
          "[doctor]") {
  LoaderFigures f = idle_workers();
  f.process_seconds = 0.95 * 4 * 4;
  Diagnosis d = diagnose_loader(f);
  CHECK(d.bottleneck == "cpu");
  CHECK_FALSE(advises(d, "more workers"));
  CHECK_FALSE(advises(d, "--batches-ahead"));
  f.workers = 3;
  f.process_seconds = 0.95 * 3 * 4;
  d = diagnose_loader(f);
  CHECK(d.bottleneck == "cpu");
  CHECK(advises(d, "use more workers: 3 of 4 cores"));
  // The process cache's readers only with the process cache.
  f = idle_workers();
  f.read_wait_seconds = 0.5 * f.seconds;
  d = diagnose_loader(f);
  CHECK(d.bottleneck == "storage");
  CHECK_FALSE(advises(d, "--cache-readers"));
  f.os_cache = false;
  CHECK(advises(diagnose_loader(f), "--cache-readers"));
}

TEST_CASE("a measurement too short for a stable verdict is unsure", "[doctor]") {
  // The same shares over 0.25 s: the epoch's start weighs too much to trust them.
  LoaderFigures f = idle_workers();
  const double scale = 0.25 / f.seconds;
  f.seconds *= scale;
  f.process_seconds *= scale;
  f.consumer_wait_seconds *= scale;
  Diagnosis d = diagnose_loader(f);
  CHECK(d.bottleneck == "unsure");
  CHECK_THAT(d.summary, Catch::StartsWith("unsure: only 400 batches in 0.25 s were measured") &&
                            Catch::Contains("too few for a reliable diagnosis") &&
                            Catch::Contains("lean to: the loader is under-used"));
  REQUIRE(d.advice.size() == 1);
  CHECK_THAT(d.advice[0], Catch::StartsWith("measure longer"));
  // Long enough but too few batches: unsure too.
  f = idle_workers();
  f.batches = kFewDoctorBatches - 1;
  CHECK(diagnose_loader(f).bottleneck == "unsure");
  CHECK(measurement_too_short(kFewDoctorBatches, kDoctorMinSeconds).empty());
  CHECK_THAT(measurement_too_short(1, 5), Catch::StartsWith("only 1 batch in 5.00 s was measured"));
  // Enough of both: a verdict.
  CHECK(diagnose_loader(idle_workers()).bottleneck == "workers");
}

TEST_CASE("a share too near the threshold between two verdicts is unsure, not one or the other",
          "[doctor]") {
  // Workers busy 68% or 72%: the same command measures either from run to run.
  for (const double busy : {kBusyShare - 0.02, kBusyShare + 0.02}) {
    LoaderFigures f = idle_workers();
    f.process_seconds = busy * f.workers * f.seconds;
    const Diagnosis d = diagnose_loader(f);
    INFO(d.summary);
    CHECK(d.bottleneck == "unsure");
    CHECK_THAT(d.summary, Catch::Contains("the workers were busy") &&
                              Catch::Contains("within 5 points of the 70%"));
    // The advice of the verdict it leans to, which the figures allow.
    CHECK_FALSE(d.advice.empty());
    CHECK_FALSE(advises(d, "--batches-ahead"));
    CHECK_FALSE(advises(d, "more workers"));
  }
  // Clear of the margin: a verdict.
  LoaderFigures f = idle_workers();
  f.process_seconds = (kBusyShare + 1.5 * kVerdictMargin) * f.workers * f.seconds;
  CHECK(diagnose_loader(f).bottleneck == "cpu");
  // With a simulated step, the consumer's waiting decides first.
  f.simulated_step = true;
  f.consumer_wait_seconds = (kConsumerWaitShare + 0.01) * f.seconds;
  CHECK(diagnose_loader(f).bottleneck == "unsure");
  f.consumer_wait_seconds = 0.01 * f.seconds;
  CHECK(diagnose_loader(f).bottleneck == "consumer");
}

namespace {

// 1,200 JPEG images of 96 x 64 with noise on a gradient: decoding and cropping them keeps every
// worker busy (over 85% of its time, far from the 70% that separates cpu from under-used).
std::string jpeg_file(const test::TempDir& dir) {
  const std::string path = dir.file("images.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    RgbImage image = test::gradient_image(96, 64, i);
    std::uint64_t state = i + 1;
    for (std::uint8_t& pixel : image.pixels) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      pixel = static_cast<std::uint8_t>(pixel + (state >> 59));  // + 0..31
    }
    return {std::move(image), static_cast<std::int64_t>(i % 10)};
  };
  RgbImageOptions jpg;
  jpg.write_mode = ImageWriteMode::kJpg;
  DatasetWriter(
      path,
      {{"image", std::make_shared<RgbImageField>(jpg)}, {"label", std::make_shared<IntField>()}},
      {.page_size = 1u << 21})
      .write(test::FunctionSource(1200, make));
  return path;
}

std::string json_field(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\": ";
  const std::size_t at = json.find(quoted);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + quoted.size();
  return json.substr(begin, json.find_first_of(",}", begin) - begin);
}

}  // namespace

TEST_CASE("ffcv doctor measures at least 2 s, repeating the epochs of a small file",
          "[doctor][cli]") {
  // Whether the verdict is then the same from run to run depends on what else the machine runs
  // (a busy machine shifts the workers' shares by tens of points); what is checked is that the
  // measurement is never the 0.2 s whose verdict swings on an idle one.
  test::TempDir dir;
  const std::string path = jpeg_file(dir);
  // 75 batches of 16 per epoch, a few tenths of a second: the doctor repeats the epochs to 2 s.
  std::string out;
  REQUIRE(test::run_cli("doctor " + path +
                            " --batch-size 16 --image-decoder random_resized_crop "
                            "--image-size 32 --json",
                        out) == 0);
  INFO(out);
  CHECK(std::stod(json_field(out, "measured_seconds")) >= kDoctorMinSeconds);
  CHECK(std::stoull(json_field(out, "measured_epochs")) > 1);
  CHECK(std::stoull(json_field(out, "measured_batches")) >= 200);  // --batches' default
  CHECK_THAT(out, !Catch::Contains("too few for a reliable diagnosis"));
  // The text report says what was measured, the epochs on one line.
  REQUIRE(test::run_cli("doctor " + path + " --batch-size 16 --batches 20", out) == 0);
  CHECK_THAT(out, Catch::Contains("  epochs 0-") && Catch::Contains("measured: ") &&
                      Catch::Contains("epochs (repeated)") && Catch::Contains("diagnosis: "));
}
