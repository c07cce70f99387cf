// `ffcv ablate`: the spec's checks, the cells, and whole sweeps through the CLI (written once,
// failed cells reported and tried again, interrupted sweeps resumed, a folder of another
// dataset refused).
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "ablate/ablation_spec.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/util/errors.hpp"
#include "test_support.hpp"

using namespace ffcv;
using namespace ffcv::tools;
using test::TempDir;

namespace {

std::string write_spec(const TempDir& dir, const std::string& text,
                       const std::string& name = "sweep.toml") {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> nonempty_lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  for (std::string field; std::getline(stream, field, separator);) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.push_back("");
  return fields;
}

std::size_t count_files(const std::string& dir, const std::string& extension) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    count += entry.path().extension() == extension;
  }
  return count;
}

constexpr const char* kSmallDataset = R"(
[dataset]
source = "imagenet-like"
count = 24
classes = 4

[bench]
batch_size = 8
epochs = 2
image_decoder = "random_resized_crop"
image_size = 32
)";

}  // namespace

TEST_CASE("an ablation spec is checked before any work", "[ablate]") {
  TempDir dir;
  const auto error_of = [&](const std::string& text) {
    try {
      load_ablation_spec(write_spec(dir, text));
    } catch (const ConfigError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  const std::string dataset = "[dataset]\nsource = \"imagenet-like\"\n";
  CHECK_THAT(error_of(dataset + "[sweep]\nnum_wokers = [1, 2]\n"),
             Catch::Contains("[sweep]: unknown key 'num_wokers' (did you mean 'num_workers'?)"));
  CHECK_THAT(error_of(dataset + "[sweep]\nnum_workers = []\n"),
             Catch::Contains("[sweep] num_workers: must be a non-empty list"));
  CHECK_THAT(error_of(dataset + "[sweep]\nnum_workers = [1, 1]\n"),
             Catch::Contains("lists 1 twice"));
  CHECK_THAT(error_of(dataset), Catch::Contains("[sweep]: the section is required"));
  CHECK_THAT(error_of(dataset + "[bench]\nnum_workers = 2\n[sweep]\nnum_workers = [1, 2]\n"),
             Catch::Contains("also a fixed setting"));
  // An old spelling and the new one are one setting.
  CHECK_THAT(error_of(dataset + "[bench]\nworkers = 2\n[sweep]\nnum_workers = [1, 2]\n"),
             Catch::Contains("also a fixed setting"));
  CHECK_THAT(error_of("[dataset]\nsource = \"beton\"\npath = \"x.beton\"\n"
                      "[sweep]\njpeg_quality = [50, 90]\n"),
             Catch::Contains("writer settings cannot apply"));
  CHECK_THAT(error_of("[dataset]\nsource = \"folder\"\n[sweep]\nworkers = [1]\n"),
             Catch::Contains("[dataset] path: is required"));
  CHECK_THAT(error_of("[dataset]\nsource = \"web\"\n[sweep]\nworkers = [1]\n"),
             Catch::Contains("'web' is not one of"));
  CHECK_THAT(error_of(dataset + "[sweep]\nworkers = [1, 2\n"),
             Catch::Contains("sweep.toml:") && Catch::Contains("TOML syntax error"));
  CHECK_THAT(error_of(dataset + "[swep]\nworkers = [1]\n"),
             Catch::Contains("unknown key 'swep' (did you mean 'sweep'?)"));
}

TEST_CASE("an ablation's cells are the product of its axes, in the spec's order", "[ablate]") {
  TempDir dir;
  const AblationSpec spec = load_ablation_spec(write_spec(dir, R"(
[dataset]
source = "imagenet-like"
[write]
write_mode = "jpg"
[bench]
epochs = 1
[sweep]
num_workers = [1, 2, 4]
jpeg_quality = [50, 90]
os_cache = [true, false]
)"));
  REQUIRE(spec.axes.size() == 3);
  CHECK(spec.axes[0].key == "num_workers");  // as listed, not sorted
  CHECK(spec.axes[2].values[1].is_bool);
  const std::vector<AblationCell> cells = expand_cells(spec);
  REQUIRE(cells.size() == 12);
  CHECK(cell_label(spec, cells[0]) == "num_workers=1 jpeg_quality=50 os_cache=true");
  CHECK(cell_label(spec, cells[11]) == "num_workers=4 jpeg_quality=90 os_cache=false");
  std::set<std::string> keys, datasets;
  for (const AblationCell& cell : cells) {
    keys.insert(cell.key());
    datasets.insert(cell.dataset_key());
    CHECK(cell.write.at("write_mode").text == "jpg");
    CHECK(cell.bench.at("epochs").text == "1");
  }
  CHECK(keys.size() == 12);
  CHECK(datasets.size() == 2);  // only jpeg_quality changes the file
}

TEST_CASE("ffcv ablate runs a 2x2 sweep: each file written once, failed cells reported",
          "[ablate][cli]") {
  TempDir dir;
  const std::string spec = write_spec(dir, std::string(kSmallDataset) + R"(
os_cache = false

[write]
write_mode = "jpg"
max_resolution = 96

[sweep]
jpeg_quality = [50, 90]
cache_budget_mib = [1, 1024]
)");
  const std::string out = dir.file("out");
  std::string output;
  // Two cells fail: the sweep finishes the others, tables all four, and exits 1.
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 1);
  INFO(output);
  CHECK(count_files(out + "/datasets", ".beton") == 2);
  const std::vector<std::string> csv = nonempty_lines_of(out + "/ablation.csv");
  REQUIRE(csv.size() == 5);
  CHECK(csv[0].rfind("jpeg_quality,cache_budget_mib,status,samples_per_s,", 0) == 0);
  std::map<std::string, std::vector<std::string>> rows;
  std::map<std::string, std::string> lines;
  for (std::size_t i = 1; i < csv.size(); ++i) {
    const std::vector<std::string> fields = split(csv[i], ',');
    rows[fields[0] + "/" + fields[1]] = fields;
    lines[fields[0] + "/" + fields[1]] = csv[i];
  }
  for (const std::string quality : {"50", "90"}) {
    // A budget below one 8 MiB page fails; the sweep goes on and says why.
    CHECK(rows.at(quality + "/1")[2] == "failed");
    CHECK_THAT(lines.at(quality + "/1"), Catch::Contains("budget is too small"));
    const std::vector<std::string>& ok = rows.at(quality + "/1024");
    CHECK(ok[2] == "ok");
    CHECK(std::stod(ok[3]) > 0);             // samples/s
    CHECK(std::stoull(ok[4]) > (1u << 20));  // peak RSS
    CHECK(std::stoull(ok[5]) > 0);           // file bytes
    CHECK(std::stod(ok[6]) > 0);             // read per epoch: the process cache's pages
  }
  CHECK_THAT(output, Catch::Contains("2 of 4 cells failed"));
  std::stringstream markdown_text;
  markdown_text << std::ifstream(out + "/ablation.md").rdbuf();
  const std::string markdown = markdown_text.str();
  CHECK_THAT(markdown, Catch::Contains("| jpeg_quality | cache_budget_mib | samples/s |"));
  CHECK_THAT(markdown, Catch::Contains("Command: `ffcv ablate"));

  // Run again: the finished cells are reused, the failed ones tried again (and fail again).
  const auto cells_before = nonempty_lines_of(out + "/cells.tsv");
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 1);
  CHECK_THAT(output, Catch::Contains("2 of 4 cells measured before") &&
                         Catch::Contains("running 2, of which 2 failed before"));
  const auto cells_after = nonempty_lines_of(out + "/cells.tsv");
  REQUIRE(cells_after.size() == 6);
  CHECK(std::vector<std::string>(cells_after.begin(), cells_after.begin() + 4) == cells_before);
  for (std::size_t i = 4; i < 6; ++i) {
    CHECK(split(cells_after[i], '\t')[0].find("cache_budget_mib=1;") != std::string::npos);
    CHECK(split(cells_after[i], '\t')[1] == "failed");
  }

  // A folder of other files is not a place for a sweep.
  std::filesystem::create_directories(dir.file("other"));
  std::ofstream(dir.file("other/notes.txt")) << "mine";
  CHECK(test::run_cli("ablate " + spec + " --output " + dir.file("other"), output) == 2);
  CHECK_THAT(output, Catch::Contains("holds other files"));
}

TEST_CASE("an interrupted ablation goes on where it stopped", "[ablate][cli]") {
  TempDir dir;
  // Slow storage makes each cell last about a second: time to interrupt the sweep mid-way.
  const std::string spec = write_spec(dir, std::string(kSmallDataset) + R"(
process_cache = true
latency_ms = 150

[sweep]
workers = [1, 2]
readers = [1, 2]
)");
  const std::string out = dir.file("out");
  const std::string cells_tsv = out + "/cells.tsv";
  const pid_t pid = test::start_cli("ablate " + spec + " --output " + out + " --quiet");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (nonempty_lines_of(cells_tsv).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGINT);
  const int status = test::wait_for_exit(pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const std::size_t finished = nonempty_lines_of(cells_tsv).size();
  REQUIRE(finished >= 1);
  REQUIRE(finished < 4);
  CHECK_FALSE(std::filesystem::exists(out + "/ablation.csv"));

  std::string output;
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains(std::to_string(finished) + " of 4 cells measured before"));
  const std::vector<std::string> lines = nonempty_lines_of(cells_tsv);
  CHECK(lines.size() == 4);
  std::set<std::string> keys;
  for (const std::string& line : lines) keys.insert(split(line, '\t')[0]);
  CHECK(keys.size() == 4);  // each cell measured once
  CHECK(nonempty_lines_of(out + "/ablation.csv").size() == 5);
}

TEST_CASE("an ablation spec's values are checked by write's and bench's own option parsers",
          "[ablate]") {
  TempDir dir;
  const auto error_of = [&](const std::string& text) {
    try {
      load_ablation_spec(write_spec(dir, "[dataset]\nsource = \"imagenet-like\"\n" + text));
    } catch (const ConfigError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(
      error_of("[bench]\nnum_workers = -1\n[sweep]\nepochs = [1]\n"),
      Catch::Contains("sweep.toml: [bench] num_workers: --num-workers must be between 0 and"));
  CHECK_THAT(error_of("[bench]\nworkers = -1\n[sweep]\nepochs = [1]\n"),
             Catch::Contains("sweep.toml: [bench] workers: --num-workers must be between 0 and"));
  CHECK_THAT(error_of("[sweep]\nbatch_size = [8, 0]\n"),
             Catch::Contains("[sweep] batch_size: --batch-size must be between 1 and"));
  CHECK_THAT(error_of("[sweep]\nnum_workers = [\"two\"]\n"),
             Catch::Contains("[sweep] num_workers: must be a number, not the string \"two\""));
  CHECK_THAT(error_of("[sweep]\nworkers = [\"2\"]\n"), Catch::Contains("not the string \"2\""));
  CHECK_THAT(error_of("[sweep]\nos_cache = [0, 1]\n"),
             Catch::Contains("[sweep] os_cache: takes true or false"));
  CHECK_THAT(error_of("[sweep]\nprocess_cache = [0, 1]\n"),
             Catch::Contains("[sweep] process_cache:") && Catch::Contains("true or false"));
  CHECK_THAT(error_of("[bench]\nbatch_size = true\n[sweep]\nworkers = [1]\n"),
             Catch::Contains("[bench] batch_size: takes a value, not true or false"));
  CHECK_THAT(error_of("[sweep]\norder = [\"random\", \"shuffled\"]\n"),
             Catch::Contains("[sweep] order:") && Catch::Contains("shuffled"));
  CHECK_THAT(error_of("[sweep]\njpeg_quality = [50, 101]\n"),
             Catch::Contains("[sweep] jpeg_quality: --jpeg-quality must be between 1 and 100"));
  CHECK_THAT(error_of("[write]\npage_size = \"3M\"\n[sweep]\nworkers = [1]\n"),
             Catch::Contains("[write] page_size: --page-size must be a power of two"));
  CHECK_THAT(error_of("[bench]\ncache_budget_mib = 0\n[sweep]\nnum_workers = [1]\n"),
             Catch::Contains("[bench] cache_budget_mib: --cache-budget-mib must be between 1"));
  CHECK_THAT(error_of("[bench]\ncache_budget = \"1K\"\n[sweep]\nworkers = [1]\n"),
             Catch::Contains("[bench] cache_budget:") && Catch::Contains("whole number of MiB"));
  // Good values of every kind pass.
  CHECK(error_of("[write]\npage_size = \"4M\"\njpeg_quality = 80\n[bench]\ncache_budget_mib = "
                 "64\nos_cache = false\ndrop_last = false\n[sweep]\nnum_workers = [0, 2]\n"
                 "order = [\"random\", \"quasi_random\"]\n") == "no error");
}

TEST_CASE("ffcv ablate refuses a bad spec, or a folder as the spec, with exit 2 before any work",
          "[ablate][cli]") {
  TempDir dir;
  const std::string out = dir.file("out");
  std::string output;
  const std::string bad =
      write_spec(dir, std::string(kSmallDataset) + "[sweep]\nnum_workers = [-1]\n");
  CHECK(test::run_cli("ablate " + bad + " --output " + out, output) == 2);
  CHECK_THAT(output, Catch::Contains("[sweep] num_workers: --num-workers must be between 0 and"));
  CHECK(test::run_cli("ablate " + bad + " --output ''", output) == 2);
  CHECK_THAT(output, Catch::Contains("--output needs a value, got an empty one"));
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK_FALSE(std::filesystem::exists(dir.file("images")));

  std::filesystem::create_directories(dir.file("specs"));
  CHECK(test::run_cli("ablate " + dir.file("specs") + " --output " + out, output) == 2);
  CHECK_THAT(output, Catch::Contains(dir.file("specs") + " is a folder, not an ablation spec"));
  // A sweep's own folder given in the spec's place: the message says where it belongs.
  std::ofstream(dir.file("specs/cells.tsv")) << "";
  CHECK(test::run_cli("ablate " + dir.file("specs"), output) == 2);
  CHECK_THAT(output, Catch::Contains("give it as --output DIR"));
  CHECK_FALSE(std::filesystem::exists(out));
}

namespace {

// A small image + label .beton; `offset` shifts the labels (same sizes, other samples).
void write_beton(const std::string& path, std::int64_t offset) {
  RgbImageOptions raw;
  raw.write_mode = ImageWriteMode::kRaw;
  DatasetWriter(path, {{"image", std::make_shared<RgbImageField>(raw)},
                       {"label", std::make_shared<IntField>()}})
      .write(test::FunctionSource(32, [offset](std::uint64_t i) {
        return std::vector<FieldValue>{test::gradient_image(16, 12, i),
                                       static_cast<std::int64_t>(i % 4) + offset};
      }));
}

}  // namespace

TEST_CASE("an ablation folder remembers its dataset, and failed cells run again once fixed",
          "[ablate][cli]") {
  TempDir dir;
  const std::string data = dir.file("data.beton");
  const auto spec_for = [&](const std::string& path) {
    return write_spec(dir, "[dataset]\nsource = \"beton\"\npath = \"" + path +
                               "\"\n[bench]\nbatch_size = 8\nepochs = 1\n[sweep]\n"
                               "workers = [1, 2]\n");
  };
  const std::string spec = spec_for(data);
  const std::string out = dir.file("out");
  std::string output;
  INFO(output);
  // Not a .beton yet: both cells fail, and the sweep says so with its exit status.
  std::ofstream(data) << "not a dataset";
  CHECK(test::run_cli("ablate " + spec + " --output " + out + " --quiet", output) == 1);
  CHECK_THAT(output, Catch::Contains("2 of 2 cells failed"));
  CHECK(nonempty_lines_of(out + "/cells.tsv").size() == 2);
  // Its cause fixed, the same command runs the failed cells again; then nothing is left to run.
  write_beton(data, 0);
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  CHECK_THAT(output, Catch::Contains("running 2, of which 2 failed before"));
  std::vector<std::string> csv = nonempty_lines_of(out + "/ablation.csv");
  REQUIRE(csv.size() == 3);
  CHECK(split(csv[1], ',')[1] == "ok");
  CHECK(split(csv[2], ',')[1] == "ok");
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  CHECK_THAT(output,
             Catch::Contains("2 of 2 cells measured before") && Catch::Contains("running 0"));
  const std::vector<std::string> cells = nonempty_lines_of(out + "/cells.tsv");
  REQUIRE(cells.size() == 4);

  // Other samples in the same file: the old figures are not reused, nor mixed with new ones.
  write_beton(data, 1);
  CHECK(test::run_cli("ablate " + spec + " --output " + out, output) == 2);
  CHECK_THAT(output, Catch::Contains("holds results made from another dataset or recipe") &&
                         Catch::Contains("the data file " + data + " changed") &&
                         Catch::Contains("--fresh"));
  // Another file named in the spec: the difference is named too.
  std::filesystem::copy_file(data, dir.file("other.beton"));
  CHECK(test::run_cli("ablate " + spec_for(dir.file("other.beton")) + " --output " + out, output) ==
        2);
  CHECK_THAT(output, Catch::Contains("dataset path was " + data + " and is now " +
                                     dir.file("other.beton")));
  CHECK(nonempty_lines_of(out + "/cells.tsv") == cells);

  // Another process measuring into the folder: refused, naming it.
  {
    const train::FolderLock held(out, "ablation folder");
    CHECK(test::run_cli("ablate " + spec_for(data) + " --output " + out + " --fresh", output) == 1);
    CHECK_THAT(output, Catch::Contains("ablation folder " + out + " is in use by process " +
                                       std::to_string(::getpid())));
  }
  // --fresh sets the old results aside (never deleted) and measures afresh.
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out + " --fresh", output) == 0);
  CHECK_THAT(output, Catch::Contains("were moved to " + out + "-before-"));
  std::string aside;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().rfind("out-before-", 0) == 0) aside = entry.path();
  }
  REQUIRE(!aside.empty());
  CHECK(nonempty_lines_of(aside + "/cells.tsv") == cells);
  CHECK(nonempty_lines_of(out + "/cells.tsv").size() == 2);
}

TEST_CASE("every shipped ablation spec loads, and the loader settings spec in its old spelling too",
          "[ablate][settings]") {
  const std::filesystem::path root =
      std::filesystem::path(FFCV_SOURCE_DIR) / "experiments/ablations";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().extension() != ".toml") continue;
    INFO(entry.path());
    CHECK_NOTHROW(expand_cells(load_ablation_spec(entry.path().string())));
    ++count;
  }
  CHECK(count >= 2);
  // The spec as it was written before the settings had one spelling: the same cells.
  TempDir dir;
  std::string text = test::text_of((root / "loader_settings.toml").string());
  const auto replace = [&](const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  };
  replace("num_workers = [1, 2]", "workers = [1, 2]");
  replace("os_cache = [true, false]", "process_cache = [false, true]");
  const std::vector<AblationCell> now =
      expand_cells(load_ablation_spec((root / "loader_settings.toml").string()));
  const std::vector<AblationCell> old = expand_cells(load_ablation_spec(write_spec(dir, text)));
  REQUIRE(old.size() == now.size());
  for (std::size_t i = 0; i < now.size(); ++i) CHECK(old[i].key() == now[i].key());
}
