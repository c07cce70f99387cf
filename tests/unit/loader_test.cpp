// The loader engine: orders through batches, determinism across workers, resume, leases,
// errors and cancellation.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "epoch_bytes.hpp"
#include "fails_for.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::batch_bytes;
using test::epoch_bytes;
using test::TempDir;

namespace {

// 500 samples: a 16x12 raw image whose pixels encode the index, and the index as label.
std::string write_dataset(const TempDir& dir, std::uint64_t count = 500) {
  const std::string path = dir.file("data.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    RgbImage image{16, 12, std::vector<std::uint8_t>(16 * 12 * 3)};
    for (std::size_t p = 0; p < image.pixels.size(); ++p) {
      image.pixels[p] = static_cast<std::uint8_t>(i * 7 + p);
    }
    return {image, static_cast<std::int64_t>(i)};
  };
  DatasetWriter(
      path, {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}},
      {.page_size = 1u << 21})
      .write(test::FunctionSource(count, make));
  return path;
}

std::vector<std::int64_t> labels_of(const Batch& batch) {
  const BatchTensor labels = batch.output("label");
  std::vector<std::int64_t> out;
  for (std::uint64_t i = 0; i < labels.count; ++i)
    out.push_back(load_le<std::int64_t>(labels.data + 8 * i));
  return out;
}

std::vector<std::int64_t> epoch_labels(Loader& loader, std::uint64_t epoch) {
  std::vector<std::int64_t> all;
  auto it = loader.epoch(epoch);
  while (auto batch = it.next()) {
    const auto labels = labels_of(*batch);
    all.insert(all.end(), labels.begin(), labels.end());
  }
  return all;
}

std::size_t resident_kib() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) / 1024;
}

}  // namespace

TEST_CASE("every order visits each selected sample once per epoch", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  for (const OrderKind kind :
       {OrderKind::kSequential, OrderKind::kRandom, OrderKind::kQuasiRandom}) {
    for (const bool drop_last : {false, true}) {
      for (const bool subset : {false, true}) {
        LoaderOptions options;
        options.batch_size = 64;
        options.num_workers = 3;
        options.drop_last = drop_last;
        options.order.kind = kind;
        options.order.seed = 5;
        std::vector<std::uint64_t> selected;
        for (std::uint64_t i = 0; i < 500; i += subset ? 3 : 1) selected.push_back(i);
        if (subset) options.order.indices = selected;
        Loader loader(path, {}, options);
        INFO(order_kind_name(kind) << " drop_last " << drop_last << " subset " << subset);
        for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
          const auto labels = epoch_labels(loader, epoch);
          const std::uint64_t expected = drop_last ? selected.size() / 64 * 64 : selected.size();
          REQUIRE(labels.size() == expected);
          std::set<std::int64_t> unique(labels.begin(), labels.end());
          CHECK(unique.size() == labels.size());
          for (const std::int64_t label : labels) {
            CHECK(std::binary_search(selected.begin(), selected.end(), std::uint64_t(label)));
          }
          if (!drop_last) CHECK(unique.size() == selected.size());
          if (kind == OrderKind::kSequential && !subset) CHECK(labels[0] == 0);
        }
      }
    }
  }
}

TEST_CASE("ranks partition each epoch", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  for (const OrderKind kind :
       {OrderKind::kSequential, OrderKind::kRandom, OrderKind::kQuasiRandom}) {
    std::multiset<std::int64_t> all;
    std::set<std::uint64_t> batch_counts;
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
      LoaderOptions options;
      options.batch_size = 32;
      options.drop_last = false;
      options.order = {.kind = kind, .seed = 9, .rank = rank, .world_size = 3};
      Loader loader(path, {}, options);
      const auto labels = epoch_labels(loader, 4);
      all.insert(labels.begin(), labels.end());
      batch_counts.insert(loader.batches_per_epoch());
    }
    INFO(order_kind_name(kind));
    CHECK(all.size() == 500);
    CHECK(std::set<std::int64_t>(all.begin(), all.end()).size() == 500);
    CHECK(batch_counts.size() == 1);  // ranks stay in lockstep
  }
}

TEST_CASE("the same seed gives identical batches with 1 and 4 workers", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  auto run = [&](int workers) {
    LoaderOptions options;
    options.batch_size = 50;
    options.num_workers = workers;
    options.order = {.kind = OrderKind::kRandom, .seed = 77};
    PipelineSpec flipped{"image",
                         "image",
                         nullptr,
                         {OpRegistry::global().make_operation("random_horizontal_flip", {})}};
    Loader loader(path, {flipped}, options);
    return epoch_bytes(loader, 3);
  };
  const auto one = run(1);
  CHECK(one.size() == 10);
  CHECK(run(4) == one);
}

TEST_CASE("flips are random per sample, keyed by seed and epoch", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 500;
  options.drop_last = false;
  PipelineSpec flipped{"image",
                       "image",
                       nullptr,
                       {OpRegistry::global().make_operation("random_horizontal_flip", {})}};
  Loader loader(path, {flipped}, options);
  auto flipped_share = [&](std::uint64_t epoch) {
    auto it = loader.epoch(epoch);
    auto batch = it.next();
    const BatchTensor images = batch->output("image");
    int flipped_count = 0;
    for (std::uint64_t i = 0; i < images.count; ++i) {
      const std::uint8_t* image = images.data + i * 16 * 12 * 3;
      // Unflipped, pixel 0 holds (i*7) mod 256; flipped, it holds the last pixel of row 0.
      flipped_count += image[0] != static_cast<std::uint8_t>(i * 7);
    }
    return flipped_count / 500.0;
  };
  const double share = flipped_share(0);
  CHECK(share == Approx(0.5).margin(0.08));
  CHECK(flipped_share(0) == share);
  CHECK(flipped_share(1) != share);
}

TEST_CASE("an iterator resumed at batch k gives exactly the remaining batches", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 40;
  options.drop_last = false;
  options.order = {.kind = OrderKind::kQuasiRandom, .seed = 3};
  Loader loader(path, {}, options);
  const auto whole = epoch_bytes(loader, 2);
  LoaderPosition position;
  {
    auto it = loader.epoch(2);
    for (int i = 0; i < 5; ++i) it.next();
    position = it.position();
  }
  CHECK(position.epoch == 2);
  CHECK(position.batches_done == 5);
  const auto rest = epoch_bytes(loader, position.epoch, position.batches_done);
  CHECK(rest == std::vector<std::vector<std::uint8_t>>(whole.begin() + 5, whole.end()));
}

TEST_CASE("a batch stays valid while held, however many are held", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 10;
  options.batches_ahead = 1;  // 3 slots
  options.drop_last = false;
  Loader loader(path, {}, options);
  const auto expected = epoch_bytes(loader, 0);
  // Every batch of the epoch held at once: each past the third takes over a slot still held.
  auto it = loader.epoch(0);
  std::vector<Batch> held;
  while (auto batch = it.next()) held.push_back(std::move(*batch));
  REQUIRE(held.size() == expected.size());
  REQUIRE(held.size() > 3);
  std::vector<std::vector<std::uint8_t>> seen;
  for (const Batch& batch : held) seen.push_back(batch_bytes(batch));
  CHECK(seen == expected);
  // Released in any order, and the next epoch gives the same bytes again.
  held.erase(held.begin() + 1);
  held.erase(held.begin() + 3);
  held.clear();
  CHECK(epoch_bytes(loader, 0) == expected);
}

TEST_CASE("an epoch stopped by a newer one hands out nothing more", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 10;
  Loader loader(path, {}, options);
  auto first = loader.epoch(0);
  auto kept = first.next();
  REQUIRE(kept.has_value());
  const auto kept_labels = labels_of(*kept);
  while (!first.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto second = loader.epoch(1);  // the first epoch's next batch was finished: still refused
  CHECK_THROWS_WITH(first.next(), Catch::Contains("was stopped"));
  CHECK(second.next().has_value());
  CHECK(labels_of(*kept) == kept_labels);
}

TEST_CASE("a failing operation surfaces at the consumer and the loader stays usable",
          "[loader][errors]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 25;
  options.num_workers = 2;
  PipelineSpec failing{
      "label", "label", nullptr, {std::make_shared<test::FailsFor>(std::set<std::uint64_t>{260})}};
  Loader loader(path, {failing}, options);
  {
    auto it = loader.epoch(0);
    std::uint64_t batches = 0;
    try {
      while (it.next()) ++batches;
      FAIL("expected the planted failure");
    } catch (const Error& error) {
      CHECK_THAT(std::string(error.what()), Catch::Contains("sample 260") &&
                                                Catch::Contains("fails_for") &&
                                                Catch::Contains("planted failure"));
    }
    CHECK(batches == 10);  // batches 0..9 came out; batch 10 holds sample 260
    CHECK_FALSE(it.next().has_value());
  }
  options.order.indices = std::vector<std::uint64_t>{1, 2, 3};
  Loader subset(path, {failing}, options);
  CHECK(epoch_labels(subset, 0).empty());  // 3 samples < one batch with drop_last
}

TEST_CASE("destroying an iterator mid-epoch stops its workers at once", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 10;
  options.num_workers = 4;
  PipelineSpec slow{
      "label", "label", nullptr, {std::make_shared<test::FailsFor>(std::set<std::uint64_t>{}, 20)}};
  Loader loader(path, {slow}, options);
  const std::size_t threads_before = test::thread_count();
  const auto start = std::chrono::steady_clock::now();
  {
    auto it = loader.epoch(0);
    it.next();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);  // a full epoch would take 500 * 20 ms / 4 = 2.5 s
  CHECK(test::thread_count_back_to(threads_before) == threads_before);
  // A new epoch cancels the previous one.
  auto first = loader.epoch(1);
  first.next();
  auto second = loader.epoch(2);
  CHECK_THROWS_WITH(first.next(), Catch::Contains("stopped"));
  CHECK(second.next().has_value());
}

TEST_CASE("stop() from another thread ends a next() waiting there with 'stopped'", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir, 40);
  LoaderOptions options;
  options.batch_size = 10;
  options.num_workers = 1;
  // 10 samples x 200 ms: the first batch takes 2 s, so the consumer is still waiting.
  PipelineSpec slow{"label",
                    "label",
                    nullptr,
                    {std::make_shared<test::FailsFor>(std::set<std::uint64_t>{}, 200)}};
  Loader loader(path, {slow}, options);
  auto it = loader.epoch(0);
  std::string error;
  std::thread consumer([&] {
    try {
      it.next();
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto stopping = std::chrono::steady_clock::now();
  it.stop();
  consumer.join();
  CHECK(std::chrono::steady_clock::now() - stopping < std::chrono::milliseconds(1500));
  CHECK_THAT(error, Catch::Contains("was stopped") && Catch::Contains("by its consumer"));
  CHECK_THROWS_WITH(it.next(), Catch::Contains("was stopped"));
}

TEST_CASE("ready() says whether next() would wait, without waiting", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir, 40);
  LoaderOptions options;
  options.batch_size = 10;
  options.num_workers = 1;
  options.batches_ahead = 0;
  // 10 samples x 30 ms: a batch takes 0.3 s on the one worker.
  PipelineSpec slow{
      "label", "label", nullptr, {std::make_shared<test::FailsFor>(std::set<std::uint64_t>{}, 30)}};
  Loader loader(path, {slow}, options);
  auto it = loader.epoch(0);
  const auto asked = std::chrono::steady_clock::now();
  CHECK_FALSE(it.ready());  // the first batch cannot be done yet
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(100));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!it.ready() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(it.ready());
  const auto took = std::chrono::steady_clock::now();
  auto first = it.next();
  CHECK(std::chrono::steady_clock::now() - took < std::chrono::milliseconds(100));
  REQUIRE(first.has_value());
  CHECK(labels_of(*first).size() == 10);
  first.reset();
  std::uint64_t rest = 0;
  while (it.next()) ++rest;
  CHECK(rest == 3);
  CHECK(it.ready());  // at the end: next() returns nullopt at once
  CHECK_FALSE(it.next().has_value());
}

TEST_CASE("thousands of epochs leave no threads or memory behind", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir, 20);
  LoaderOptions options;
  options.batch_size = 8;
  options.num_workers = 2;
  Loader loader(path, {}, options);
  const std::size_t threads_before = test::thread_count();
  std::uint64_t samples = 0;
  for (std::uint64_t epoch = 0; epoch < 2000; ++epoch)
    samples += epoch_labels(loader, epoch).size();
  CHECK(samples == 2000 * 16);
  CHECK(test::thread_count_back_to(threads_before) == threads_before);
}

TEST_CASE("the process cache gives the same batches as mmap", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir, 3000);  // 3000 x 576 B: one 2 MiB page
  LoaderOptions options;
  options.batch_size = 100;
  options.order = {.kind = OrderKind::kQuasiRandom, .seed = 1};
  Loader mapped(path, {}, options);
  options.os_cache = false;
  options.cache.budget_bytes = 64u << 20;
  Loader cached(path, {}, options);
  CHECK(epoch_bytes(cached, 0) == epoch_bytes(mapped, 0));
}

TEST_CASE("bad loader configurations are refused up front", "[loader][errors]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 0;
  CHECK_THROWS_AS(Loader(path, {}, options), ConfigError);
  options.batch_size = 8;
  CHECK_THROWS_WITH(Loader(path, {{"x", "nope", nullptr, {}}}, options),
                    Catch::Contains("no field named 'nope'"));
  CHECK_THROWS_WITH(Loader(path,
                           {{"label",
                             "label",
                             nullptr,
                             {OpRegistry::global().make_operation("random_horizontal_flip", {})}}},
                           options),
                    Catch::Contains("pipeline 'label'") && Catch::Contains("(H, W, C)"));
  CHECK_THROWS_WITH(OpRegistry::global().make_operation("random_horizontal_flip",
                                                        OpParams().set("probabilty", 0.3)),
                    Catch::Contains("'probabilty'") && Catch::Contains("probability"));
  CHECK_THROWS_WITH(OpRegistry::global().make_operation("flip", {}),
                    Catch::Contains("unknown operation 'flip'"));
}

TEST_CASE("stopping an epoch wakes workers waiting for slow storage", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir, 8000);  // 8000 x 576 B: 3 pages of 2 MiB
  LoaderOptions options;
  options.batch_size = 100;
  options.num_workers = 3;
  options.os_cache = false;
  options.cache.reader_threads = 1;
  options.cache.throttle.latency_seconds = 0.5;
  Loader loader(path, {}, options);
  const auto start = std::chrono::steady_clock::now();
  {
    auto it = loader.epoch(0);
    CHECK(it.next().has_value());  // waits for the first page (0.5 s)
  }  // workers are now waiting for the second page: stopping must not wait for it
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);
  CHECK(epoch_labels(loader, 1).size() == 8000);  // and the loader still works
}

TEST_CASE("a corrupt JPEG payload is an error naming the sample, and only that sample",
          "[loader][errors]") {
  TempDir dir;
  const std::string path = dir.file("jpeg.beton");
  RgbImageOptions jpeg;
  jpeg.write_mode = ImageWriteMode::kJpg;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {test::gradient_image(32, 24, i), static_cast<std::int64_t>(i)};
  };
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(jpeg)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(100, make));
  std::uint64_t ptr = 0;
  {
    const Reader reader(path);
    ptr = ImageMetadata::load(reader.column(37, 0)).data_ptr;
  }
  std::vector<std::uint8_t> bytes = test::read_file(path);
  std::fill_n(bytes.begin() + ptr, 4, 0x00);  // destroy the SOI marker and the next segment
  test::write_file(path, bytes);

  LoaderOptions options;
  options.batch_size = 10;
  options.num_workers = 2;
  Loader loader(path, {}, options);  // opening succeeds: the tables are intact
  CHECK_THROWS_WITH(epoch_labels(loader, 0),
                    Catch::Contains("sample 37") && Catch::Contains("step 'image'"));
  std::vector<std::uint64_t> others;
  for (std::uint64_t i = 0; i < 100; ++i) {
    if (i != 37) others.push_back(i);
  }
  loader.set_indices(others);
  CHECK(epoch_labels(loader, 1).size() == 90);
}

TEST_CASE("one field can feed several outputs with their own operations", "[loader]") {
  TempDir dir;
  const std::string path = write_dataset(dir);
  LoaderOptions options;
  options.batch_size = 100;
  const auto flip = OpRegistry::global().make_operation("random_horizontal_flip",
                                                        OpParams().set("probability", 1.0));
  Loader loader(path, {{"plain", "image", nullptr, {}}, {"mirrored", "image", nullptr, {flip}}},
                options);
  auto it = loader.epoch(0);
  auto batch = it.next();
  const BatchTensor plain = batch->output("plain");
  const BatchTensor mirrored = batch->output("mirrored");
  CHECK(batch->num_outputs() == 3);  // plain, mirrored, and the default label output
  for (std::uint64_t i = 0; i < plain.count; ++i) {
    const std::uint8_t* a = plain.data + i * 576;
    const std::uint8_t* b = mirrored.data + i * 576;
    for (int y = 0; y < 12; ++y) {
      for (int x = 0; x < 16; ++x) {
        for (int c = 0; c < 3; ++c) {
          REQUIRE(a[(y * 16 + x) * 3 + c] == b[(y * 16 + 15 - x) * 3 + c]);
        }
      }
    }
  }
}
