// DatasetWriter: determinism, page rules, page growth, atomic output and its errors.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::FunctionSource;
using test::TempDir;

namespace {

std::vector<NamedField> image_label_bytes(ImageWriteMode mode) {
  RgbImageOptions options;
  options.write_mode = mode;
  options.compress_probability = 0.5;
  return {{"image", std::make_shared<RgbImageField>(options)},
          {"label", std::make_shared<IntField>()},
          {"extra", std::make_shared<BytesField>()}};
}

std::vector<FieldValue> varied_sample(std::uint64_t i) {
  // Sizes vary so that pages fill unevenly: raw payloads up to ~190 KB.
  const int width = 40 + static_cast<int>((i * 97) % 260);
  const int height = 30 + static_cast<int>((i * 53) % 220);
  return {test::gradient_image(width, height, i), static_cast<std::int64_t>(i % 10),
          Bytes(1 + i % 1000, static_cast<std::uint8_t>(i))};
}

std::size_t files_in(const std::string& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                                std::filesystem::directory_iterator()));
}

}  // namespace

TEST_CASE("same input and seed give the same bytes with 1, 2 and 7 workers", "[writer]") {
  TempDir dir;
  const FunctionSource source(300, varied_sample);
  std::vector<std::vector<std::uint8_t>> outputs;
  for (int workers : {1, 2, 7}) {
    const std::string path = dir.file("w" + std::to_string(workers) + ".beton");
    DatasetWriter(path, image_label_bytes(ImageWriteMode::kProportion),
                  {.page_size = 1u << 21, .num_workers = workers, .seed = 11})
        .write(source);
    outputs.push_back(test::read_file(path));
  }
  CHECK(outputs[0].size() > (4u << 20));  // several pages
  CHECK(outputs[0] == outputs[1]);
  CHECK(outputs[0] == outputs[2]);
}

TEST_CASE("every sample's allocations share one page and none crosses a page", "[writer]") {
  TempDir dir;
  const std::string path = dir.file("pages.beton");
  const WriteSummary summary =
      DatasetWriter(path, image_label_bytes(ImageWriteMode::kRaw), {.page_size = 1u << 21})
          .write(FunctionSource(300, varied_sample));
  const Reader reader(path);
  CHECK(summary.num_pages > 3);
  CHECK(reader.file_size() == summary.file_size);
  std::map<std::uint64_t, std::set<std::uint64_t>> pages_of_sample;
  for (const AllocEntry& entry : reader.allocations()) {
    const std::uint64_t page = entry.ptr / reader.page_size();
    CHECK((entry.ptr + entry.size - 1) / reader.page_size() == page);
    pages_of_sample[entry.sample_id].insert(page);
  }
  CHECK(pages_of_sample.size() == 300);
  for (const auto& [sample, pages] : pages_of_sample) CHECK(pages.size() == 1);
  // The data region starts at the first page boundary after the metadata table.
  CHECK(reader.allocations().front().ptr == align_up(reader.metadata_end(), reader.page_size()));
  // The allocation table directly follows the last full page.
  CHECK(reader.header().alloc_table_ptr % reader.page_size() == 0);
}

TEST_CASE("a sample larger than the page grows the page size instead of failing", "[writer]") {
  TempDir dir;
  const std::string path = dir.file("grow.beton");
  // Sample 3 is a 1100x1000 raw image: 3.3 MB > 2 MiB, so pages become 4 MiB from there on.
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {i == 3 ? test::gradient_image(1100, 1000, i) : test::gradient_image(300, 300, i)};
  };
  const WriteSummary summary =
      DatasetWriter(path, {{"image", std::make_shared<RgbImageField>()}}, {.page_size = 1u << 21})
          .write(FunctionSource(12, make));
  CHECK(summary.page_size == (4u << 20));
  const Reader reader(path);
  CHECK(reader.page_size() == (4u << 20));
  for (std::uint64_t i = 0; i < 12; ++i) {
    CHECK(std::get<RgbImage>(reader.decode(i, 0)).pixels == std::get<RgbImage>(make(i)[0]).pixels);
  }
}

TEST_CASE("datasets without heap data have no pages and an empty allocation table", "[writer]") {
  TempDir dir;
  const std::string path = dir.file("scalars.beton");
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {static_cast<double>(i) / 3, static_cast<std::int64_t>(i)};
  };
  DatasetWriter(
      path, {{"value", std::make_shared<FloatField>()}, {"index", std::make_shared<IntField>()}})
      .write(FunctionSource(600, make));
  const Reader reader(path);
  CHECK(reader.allocations().empty());
  CHECK(reader.header().alloc_table_ptr == reader.metadata_end());
  CHECK(reader.file_size() == 24 + 2 * 1041 + 600 * 16);
}

TEST_CASE("a failing sample names itself, leaves no temporary file and keeps the old output",
          "[writer][errors]") {
  TempDir dir;
  const std::string path = dir.file("out.beton");
  test::write_file(path, {1, 2, 3});
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    if (i == 41) return {FieldValue(JsonText{"x"})};
    return {static_cast<std::int64_t>(i)};
  };
  try {
    DatasetWriter(path, {{"label", std::make_shared<IntField>()}}, {.num_workers = 4})
        .write(FunctionSource(100, make));
    FAIL("expected an EncodeError");
  } catch (const EncodeError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("sample 41"));
    CHECK_THAT(message, Catch::Contains("'label'"));
    CHECK_THAT(message, Catch::Contains("expects an int, got json"));
  }
  CHECK(test::read_file(path) == std::vector<std::uint8_t>{1, 2, 3});
  CHECK(files_in(dir.path()) == 1);
}

TEST_CASE("an exception thrown by the source stops the writer cleanly", "[writer][errors]") {
  TempDir dir;
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    if (i >= 500) throw std::runtime_error("source broke");
    return {static_cast<std::int64_t>(i)};
  };
  CHECK_THROWS_WITH(DatasetWriter(dir.file("x.beton"), {{"label", std::make_shared<IntField>()}},
                                  {.num_workers = 3})
                        .write(FunctionSource(100000, make)),
                    Catch::Contains("sample 500") && Catch::Contains("source broke"));
  CHECK(files_in(dir.path()) == 0);
}

TEST_CASE("unwritable outputs are clear IoErrors", "[writer][errors]") {
  TempDir dir;
  const std::vector<NamedField> fields = {{"label", std::make_shared<IntField>()}};
  const FunctionSource source(
      3, [](std::uint64_t i) { return std::vector<FieldValue>{static_cast<std::int64_t>(i)}; });
  CHECK_THROWS_WITH(DatasetWriter(dir.file("missing/dir/x.beton"), fields).write(source),
                    Catch::Contains("missing/dir/x.beton") && Catch::Contains("cannot create"));
  CHECK_THROWS_AS(DatasetWriter(dir.path(), fields).write(source), IoError);
  if (::geteuid() != 0) {  // root ignores directory permissions
    ::chmod(dir.path().c_str(), 0500);
    CHECK_THROWS_AS(DatasetWriter(dir.file("x.beton"), fields).write(source), IoError);
  }
}

TEST_CASE("bad writer configurations are refused up front", "[writer][errors]") {
  const FieldPtr integer = std::make_shared<IntField>();
  CHECK_THROWS_AS(DatasetWriter("x", {}), ConfigError);
  CHECK_THROWS_AS(DatasetWriter("x", {{"a_name_of_17_char", integer}}), ConfigError);
  CHECK_THROWS_AS(DatasetWriter("x", {{"", integer}}), ConfigError);
  CHECK_THROWS_AS(DatasetWriter("x", {{"a", integer}, {"a", integer}}), ConfigError);
  CHECK_THROWS_AS(DatasetWriter("x", {{"a", integer}}, {.page_size = 3u << 20}), ConfigError);
  CHECK_THROWS_AS(DatasetWriter("x", {{"a", integer}}, {.page_size = 1u << 20}), ConfigError);
  RgbImageOptions bad_quality;
  bad_quality.jpeg_quality = 0;
  CHECK_THROWS_AS(RgbImageField(bad_quality), ConfigError);
  CHECK_THROWS_AS(parse_image_write_mode("png"), ConfigError);
}

TEST_CASE("values FFCV could not read back are refused with the sample named", "[writer][errors]") {
  TempDir dir;
  auto empty_bytes = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {i == 2 ? Bytes{} : Bytes{1, 2}};
  };
  CHECK_THROWS_WITH(DatasetWriter(dir.file("b.beton"), {{"blob", std::make_shared<BytesField>()}})
                        .write(FunctionSource(5, empty_bytes)),
                    Catch::Contains("sample 2") && Catch::Contains("empty"));
  auto wrong_count = [](std::uint64_t) -> std::vector<FieldValue> {
    return {std::int64_t{1}, std::int64_t{2}};
  };
  CHECK_THROWS_WITH(DatasetWriter(dir.file("c.beton"), {{"label", std::make_shared<IntField>()}})
                        .write(FunctionSource(5, wrong_count)),
                    Catch::Contains("2 values for 1 fields"));
  auto huge = [](std::uint64_t) -> std::vector<FieldValue> {
    return {RgbImage{70000, 1, std::vector<std::uint8_t>(70000 * 3)}};
  };
  CHECK_THROWS_WITH(
      DatasetWriter(dir.file("d.beton"), {{"image", std::make_shared<RgbImageField>()}})
          .write(FunctionSource(1, huge)),
      Catch::Contains("65535"));
}

TEST_CASE("shuffle_indices stores a seeded permutation of the source's samples", "[writer]") {
  TempDir dir;
  // A source in "class order": label i / 100, as an image folder lists its classes.
  auto make = [](std::uint64_t i) -> std::vector<FieldValue> {
    return {static_cast<std::int64_t>(i), static_cast<std::int64_t>(i / 100)};
  };
  const auto rows = [&](const std::string& name, bool shuffle, std::uint64_t seed) {
    const std::string path = dir.file(name);
    DatasetWriter(
        path, {{"index", std::make_shared<IntField>()}, {"label", std::make_shared<IntField>()}},
        {.seed = seed, .shuffle_indices = shuffle})
        .write(FunctionSource(1000, make));
    const Reader reader(path);
    std::vector<std::int64_t> indices;
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      const std::int64_t index = std::get<std::int64_t>(reader.decode(i, 0));
      CHECK(std::get<std::int64_t>(reader.decode(i, 1)) == index / 100);  // rows stay whole
      indices.push_back(index);
    }
    return indices;
  };
  const std::vector<std::int64_t> plain = rows("plain.beton", false, 1);
  const std::vector<std::int64_t> shuffled = rows("a.beton", true, 1);
  std::vector<std::int64_t> sorted = shuffled;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == plain);  // every sample once
  CHECK(shuffled != plain);
  // Far from class order: the first 100 rows hold several classes.
  std::set<std::int64_t> classes;
  for (std::size_t i = 0; i < 100; ++i) classes.insert(shuffled[i] / 100);
  CHECK(classes.size() >= 8);
  CHECK(rows("b.beton", true, 1) == shuffled);  // the seed decides
  CHECK(rows("c.beton", true, 2) != shuffled);
}

namespace {

// Records each prefetch() hint and each load(). With `wait_for_hints`, load(i) waits (up to 10 s)
// for the hint of sample i + kReadAhead / 2: the hints must run ahead of the loads on a thread
// that does not wait for them (woken for batches of hints, it may lag the full distance a little).
class PrefetchRecorder final : public SampleSource {
 public:
  // With `blocking_hint` below size, that hint waits (up to 10 s) until every sample is loaded,
  // as opening a file on a stalled disk may: the loads must not wait for it.
  PrefetchRecorder(std::uint64_t size, bool wait_for_hints, std::uint64_t blocking_hint = ~0ull)
      : size_(size), wait_for_hints_(wait_for_hints), blocking_hint_(blocking_hint) {}
  std::uint64_t size() const override { return size_; }
  std::vector<FieldValue> load(std::uint64_t index) const override {
    std::unique_lock lock(mutex_);
    ++loads_started_;
    ++loads_[index];
    hinted_.notify_all();
    if (wait_for_hints_) {
      const std::uint64_t awaited = std::min(index + SampleSource::kReadAhead / 2, size_ - 1);
      if (!hinted_.wait_for(lock, std::chrono::seconds(10),
                            [&] { return hinted_set_.count(awaited) > 0; })) {
        missed_.push_back(index);
      }
    }
    return {static_cast<std::int64_t>(index)};
  }
  void prefetch(std::uint64_t index) const override {
    {
      std::unique_lock lock(mutex_);
      hints_.push_back({index, loads_started_});
      hinted_set_.insert(index);
      if (index == blocking_hint_ && !hinted_.wait_for(lock, std::chrono::seconds(10),
                                                       [&] { return loads_.size() == size_; })) {
        blocked_hint_held_loads_ = true;
      }
    }
    hinted_.notify_all();
  }
  struct Hint {
    std::uint64_t index, loads_started;  // the loads begun when the hint came
  };
  std::vector<Hint> hints() const { return hints_; }
  std::map<std::uint64_t, int> loads() const { return loads_; }
  std::vector<std::uint64_t> missed() const { return missed_; }  // loads whose hint never came
  bool blocked_hint_held_loads() const { return blocked_hint_held_loads_; }

 private:
  std::uint64_t size_;
  bool wait_for_hints_;
  std::uint64_t blocking_hint_;
  mutable bool blocked_hint_held_loads_ = false;
  mutable std::mutex mutex_;
  mutable std::condition_variable hinted_;
  mutable std::uint64_t loads_started_ = 0;
  mutable std::vector<Hint> hints_;
  mutable std::set<std::uint64_t> hinted_set_;
  mutable std::map<std::uint64_t, int> loads_;
  mutable std::vector<std::uint64_t> missed_;
};

}  // namespace

TEST_CASE("the summary times the finish: the last pages, the tables and the rename", "[writer]") {
  TempDir dir;
  std::vector<std::int64_t> values(300);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::int64_t(i);
  const auto write = [&] {
    return DatasetWriter(dir.file("timed.beton"), {{"label", std::make_shared<IntField>()}}, {})
        .write(test::FunctionSource(
            values.size(), [&](std::uint64_t i) { return std::vector<FieldValue>{values[i]}; }));
  };
  for (const WriteSummary& summary : {write(), write()}) {  // the second replaces the first
    CHECK(summary.stages.finish > 0);
    CHECK(summary.stages.finish <= summary.seconds);
  }
}

TEST_CASE("the writer hints reads up to kReadAhead samples ahead, once each, on its own thread",
          "[writer]") {
  for (const bool shuffled : {false, true}) {
    for (const int workers : {1, 3}) {
      INFO("shuffle_indices " << shuffled << ", " << workers << " workers");
      TempDir dir;
      const std::uint64_t count = 3 * SampleSource::kReadAhead + 5;
      PrefetchRecorder source(count, /*wait_for_hints=*/!shuffled);
      WriterOptions options;
      options.num_workers = workers;
      options.shuffle_indices = shuffled;
      DatasetWriter(dir.file("prefetch.beton"), {{"label", std::make_shared<IntField>()}}, options)
          .write(source);
      const auto loads = source.loads();
      REQUIRE(loads.size() == count);
      for (const auto& [index, times] : loads) CHECK(times == 1);
      const auto hints = source.hints();
      std::set<std::uint64_t> hinted;
      for (const auto& hint : hints) {
        INFO("hint for sample " << hint.index);
        CHECK(hint.index < count);
        CHECK(hinted.insert(hint.index).second);  // once
      }
      if (shuffled) continue;  // the hints are in the source's numbering, not the rows' order
      CHECK(source.missed().empty());  // each load saw the hint kReadAhead / 2 ahead of it come
      for (std::size_t h = 0; h < hints.size(); ++h) {
        INFO("hint " << h << " for sample " << hints[h].index);
        CHECK(hints[h].index == h);  // in the rows' order
        // Never more than kReadAhead past the samples claimed: a claimed sample's load may not
        // have begun yet, one per worker.
        if (hints[h].index + workers >= SampleSource::kReadAhead) {
          CHECK(hints[h].loads_started + SampleSource::kReadAhead + workers > hints[h].index);
        }
      }
    }
  }
}

TEST_CASE("a read-ahead hint that blocks does not hold up the encoders", "[writer]") {
  for (const int workers : {1, 2}) {
    INFO(workers << " workers");
    TempDir dir;
    const std::uint64_t count = 2 * SampleSource::kReadAhead;
    PrefetchRecorder source(count, /*wait_for_hints=*/false, /*blocking_hint=*/3);
    WriterOptions options;
    options.num_workers = workers;
    const WriteSummary summary =
        DatasetWriter(dir.file("blocked.beton"), {{"label", std::make_shared<IntField>()}}, options)
            .write(source);
    CHECK(summary.num_samples == count);
    CHECK_FALSE(source.blocked_hint_held_loads());  // every sample loaded while hint 3 waited
  }
}

namespace {

// A source that loads one at a time: records the order of its loads and how many ran at once,
// and stays in each load a moment (so that loads of several workers would overlap if allowed).
class OneAtATimeSource final : public SampleSource {
 public:
  explicit OneAtATimeSource(std::uint64_t size) : size_(size) {}
  std::uint64_t size() const override { return size_; }
  bool loads_one_at_a_time() const override { return true; }
  std::vector<FieldValue> load(std::uint64_t index) const override {
    const int running = ++running_;
    int seen = most_running_.load();
    while (running > seen && !most_running_.compare_exchange_weak(seen, running)) {
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    {
      std::lock_guard lock(mutex_);
      order_.push_back(index);
    }
    --running_;
    if (index == 7) throw EncodeError("sample 7 is bad");  // a failed load passes the turn on
    return {static_cast<std::int64_t>(index)};
  }
  std::vector<std::uint64_t> order() const { return order_; }
  int most_running() const { return most_running_.load(); }

 private:
  std::uint64_t size_;
  mutable std::atomic<int> running_{0}, most_running_{0};
  mutable std::mutex mutex_;
  mutable std::vector<std::uint64_t> order_;
};

}  // namespace

TEST_CASE("a source that loads one at a time is loaded in row order, never two at once",
          "[writer]") {
  TempDir dir;
  const bool shuffle = GENERATE(false, true);
  const OneAtATimeSource source(400);
  std::vector<std::uint64_t> skipped;
  DatasetWriter(dir.file("turns.beton"), {{"index", std::make_shared<IntField>()}},
                {.num_workers = 4,
                 .seed = 3,
                 .skip_bad_samples = true,
                 .shuffle_indices = shuffle,
                 .on_skipped = [&](std::uint64_t row, const std::string&,
                                   const std::string&) { skipped.push_back(row); }})
      .write(source);
  CHECK(source.most_running() == 1);
  // Row order: the source's own order, or the permutation the file's rows hold.
  std::vector<std::uint64_t> expected(400);
  for (std::uint64_t i = 0; i < expected.size(); ++i) expected[i] = i;
  if (shuffle) {
    const Reader reader(dir.file("turns.beton"));
    std::vector<std::uint64_t> rows;
    for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
      rows.push_back(std::uint64_t(std::get<std::int64_t>(reader.decode(i, 0))));
    }
    const std::vector<std::uint64_t> loaded = source.order();
    const auto bad = std::find(loaded.begin(), loaded.end(), 7u);
    REQUIRE(bad != loaded.end());
    rows.insert(rows.begin() + (bad - loaded.begin()), 7);  // the skipped one
    expected = rows;
  }
  CHECK(source.order() == expected);
  CHECK(skipped.size() == 1);
}
