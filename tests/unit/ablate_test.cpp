// `ffcv ablate`: the spec's checks, the cells, and whole sweeps through the CLI (written once,
// failed cells reported, interrupted sweeps resumed).
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
#include "ffcv/errors.hpp"
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

std::vector<std::string> lines_of(const std::string& path) {
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
  CHECK_THAT(error_of(dataset + "[sweep]\nwokers = [1, 2]\n"),
             Catch::Contains("[sweep]: unknown key 'wokers' (did you mean 'workers'?)"));
  CHECK_THAT(error_of(dataset + "[sweep]\nworkers = []\n"),
             Catch::Contains("[sweep] workers: must be a non-empty list"));
  CHECK_THAT(error_of(dataset + "[sweep]\nworkers = [1, 1]\n"), Catch::Contains("lists 1 twice"));
  CHECK_THAT(error_of(dataset), Catch::Contains("[sweep]: the section is required"));
  CHECK_THAT(error_of(dataset + "[bench]\nworkers = 2\n[sweep]\nworkers = [1, 2]\n"),
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
workers = [1, 2, 4]
jpeg_quality = [50, 90]
process_cache = [false, true]
)"));
  REQUIRE(spec.axes.size() == 3);
  CHECK(spec.axes[0].key == "workers");  // as listed, not sorted
  CHECK(spec.axes[2].values[1].is_bool);
  const std::vector<AblationCell> cells = expand_cells(spec);
  REQUIRE(cells.size() == 12);
  CHECK(cell_label(spec, cells[0]) == "workers=1 jpeg_quality=50 process_cache=false");
  CHECK(cell_label(spec, cells[11]) == "workers=4 jpeg_quality=90 process_cache=true");
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
process_cache = true

[write]
write_mode = "jpg"
max_resolution = 96

[sweep]
jpeg_quality = [50, 90]
cache_budget = ["1M", "1G"]
)");
  const std::string out = dir.file("out");
  std::string output;
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  INFO(output);
  CHECK(count_files(out + "/datasets", ".beton") == 2);
  const std::vector<std::string> csv = lines_of(out + "/ablation.csv");
  REQUIRE(csv.size() == 5);
  CHECK(csv[0].rfind("jpeg_quality,cache_budget,status,samples_per_s,", 0) == 0);
  std::map<std::string, std::vector<std::string>> rows;
  std::map<std::string, std::string> lines;
  for (std::size_t i = 1; i < csv.size(); ++i) {
    const std::vector<std::string> fields = split(csv[i], ',');
    rows[fields[0] + "/" + fields[1]] = fields;
    lines[fields[0] + "/" + fields[1]] = csv[i];
  }
  for (const std::string quality : {"50", "90"}) {
    // A budget below one 8 MiB page fails; the sweep goes on and says why.
    CHECK(rows.at(quality + "/1M")[2] == "failed");
    CHECK_THAT(lines.at(quality + "/1M"), Catch::Contains("budget is too small"));
    const std::vector<std::string>& ok = rows.at(quality + "/1G");
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
  CHECK_THAT(markdown, Catch::Contains("| jpeg_quality | cache_budget | samples/s |"));
  CHECK_THAT(markdown, Catch::Contains("Command: `ffcv ablate"));

  // Run again: every cell is reused, nothing is written or measured again.
  const auto cells_before = lines_of(out + "/cells.tsv");
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  CHECK_THAT(output, Catch::Contains("4 of 4 cells measured before"));
  CHECK(lines_of(out + "/cells.tsv") == cells_before);

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
  while (lines_of(cells_tsv).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGINT);
  const int status = test::wait_for_exit(pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const std::size_t finished = lines_of(cells_tsv).size();
  REQUIRE(finished >= 1);
  REQUIRE(finished < 4);
  CHECK_FALSE(std::filesystem::exists(out + "/ablation.csv"));

  std::string output;
  REQUIRE(test::run_cli("ablate " + spec + " --output " + out, output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains(std::to_string(finished) + " of 4 cells measured before"));
  const std::vector<std::string> lines = lines_of(cells_tsv);
  CHECK(lines.size() == 4);
  std::set<std::string> keys;
  for (const std::string& line : lines) keys.insert(split(line, '\t')[0]);
  CHECK(keys.size() == 4);  // each cell measured once
  CHECK(lines_of(out + "/ablation.csv").size() == 5);
}
