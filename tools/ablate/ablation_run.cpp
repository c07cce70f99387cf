#include "ablate/ablation_run.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/child_process.hpp"
#include "common/interrupt_watch.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/run_results.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/fnv1a.hpp"
#include "ffcv/util/json_text.hpp"

namespace ffcv::tools {
namespace {

namespace fs = std::filesystem;

void append_arguments(const Settings& settings, std::vector<std::string>& arguments) {
  for (std::string& argument : setting_arguments(settings))
    arguments.push_back(std::move(argument));
}

// "jpeg_quality=50,write_mode=jpg" made safe as a file name; "default" with no settings.
std::string dataset_file_name(const Settings& write) {
  std::string name;
  for (const auto& [key, value] : write) {
    name += (name.empty() ? "" : ",") + key + "=" + value.text;
  }
  if (name.empty()) name = "default";
  for (char& c : name) {
    const bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == ',' ||
                      c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  return name + ".beton";
}

std::string tsv_field(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// One cells.tsv line: key, ok, error, then the figures.
std::string tsv_line(const CellResult& r) {
  char figures[512];
  std::snprintf(figures, sizeof figures, "%.6g\t%.6g\t%llu\t%llu\t%.6g\t%.6g\t%.6g\t%.6g",
                r.samples_per_s, r.seconds, static_cast<unsigned long long>(r.peak_rss_bytes),
                static_cast<unsigned long long>(r.file_bytes), r.read_bytes_per_epoch,
                r.loader_wait_share, r.distinct_pages_per_batch, r.val_top1);
  return tsv_field(r.key) + "\t" + (r.ok ? "ok" : "failed") + "\t" +
         tsv_field(redact_url_passwords(r.error)) + "\t" + figures + "\n";
}

void append_durably(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path, "open for appending", errno);
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const int error = errno;
  const bool synced = written && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced) throw IoError(path, "append a result", error);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void say(const AblationRunOptions& options, const std::string& text) {
  if (!options.quiet) std::printf("%s\n", redact_url_passwords(text).c_str()), std::fflush(stdout);
}

// The cell's key as cells.tsv keeps it: the password of a URL among its values left out
// (url_credentials.hpp), as everywhere the sweep writes.
std::string stored_key(const AblationCell& cell) { return redact_url_passwords(cell.key()); }

// Runs `ffcv ARGS` for a preparation step; throws ConfigError with its error line.
void prepare(const AblationRunOptions& options, const std::vector<std::string>& arguments,
             const std::string& what, bool& interrupted) {
  const ChildResult child = run_child(options.ffcv_program, arguments);
  if (child.interrupted) {
    interrupted = true;
    return;
  }
  if (child.status != 0) throw ConfigError("ablate: cannot " + what + ": " + error_line(child));
}

// The .beton a cell reads, written first when missing. Empty when interrupted.
std::string ensure_dataset(const AblationSpec& spec, const AblationCell& cell,
                           const AblationRunOptions& options, bool& interrupted) {
  const DatasetSpec& data = spec.dataset;
  if (data.source == "beton") return data.path;
  const fs::path out = fs::path(options.output_dir);
  const std::string path = (out / "datasets" / dataset_file_name(cell.write)).string();
  if (fs::exists(path)) return path;  // written completely (ffcv write renames into place)
  fs::create_directories(out / "datasets");

  std::vector<std::string> arguments{"write"};
  if (data.source == "imagenet-like") {
    const std::string images = (out / "images").string();
    if (!fs::exists(fs::path(images) / ".imagenet-like.json")) {
      say(options,
          "generating " + std::to_string(data.count) + " ImageNet-like images in " + images);
      prepare(options,
              {"write", "imagenet-like", "--count", std::to_string(data.count), "--classes",
               std::to_string(data.classes), "--seed", std::to_string(data.seed), "--images-dir",
               images, "--output", (out / "images.beton").string(), "--write-mode", "raw",
               "--max-resolution", "32", "--quiet"},
              "generate the ImageNet-like images", interrupted);
      if (interrupted) return "";
      fs::remove(out / "images.beton");
      fs::remove(out / "images.beton.sources.json");
    }
    arguments.insert(arguments.end(), {"folder", images});
  } else if (data.source == "folder") {
    arguments.insert(arguments.end(), {"folder", data.path});
  } else {  // fashion-mnist
    arguments.push_back("fashion-mnist");
    if (!data.path.empty()) arguments.push_back(data.path);
  }
  arguments.insert(arguments.end(),
                   {"--output", path, "--seed", std::to_string(data.seed), "--quiet"});
  append_arguments(cell.write, arguments);
  say(options, "writing " + path);
  prepare(options, arguments, "write " + path, interrupted);
  fs::remove(path + ".sources.json");
  return interrupted ? "" : path;
}

CellResult measure(const AblationCell& cell, const std::string& dataset,
                   const AblationRunOptions& options, bool& interrupted) {
  std::vector<std::string> arguments{"bench", dataset, "--json"};
  append_arguments(cell.bench, arguments);
  const ChildResult child = run_child(options.ffcv_program, arguments);
  CellResult result;
  result.key = stored_key(cell);
  if (child.interrupted) {
    interrupted = true;
    return result;
  }
  result.seconds = child.seconds;
  result.peak_rss_bytes = child.peak_rss_bytes;
  std::error_code error;
  const auto size = fs::file_size(dataset, error);
  result.file_bytes = error ? 0 : size;
  if (child.status != 0) {
    result.error = error_line(child);
    if (result.error.empty())
      result.error = "bench exited with status " + std::to_string(child.status);
    return result;
  }
  const std::vector<double> rates = json_numbers(child.output, "samples_per_s");
  const std::vector<double> seconds = json_numbers(child.output, "seconds");
  const std::vector<double> waits = json_numbers(child.output, "consumer_wait_seconds");
  const std::vector<double> storage = json_numbers(child.output, "storage_bytes_read");
  const std::vector<double> pages = json_numbers(child.output, "distinct_pages_per_batch");
  if (rates.empty() || rates.size() != seconds.size() || rates.size() != waits.size()) {
    result.error = "bench's output has no epochs: " + last_line(child.output);
    return result;
  }
  result.ok = true;
  result.samples_per_s = median(rates);
  std::vector<double> shares;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    shares.push_back(seconds[i] > 0 ? waits[i] / seconds[i] : 0);
  }
  result.loader_wait_share = median(shares);
  result.distinct_pages_per_batch = median(pages);
  const double epochs = static_cast<double>(rates.size());
  // The process cache counts its reads (cumulative over epochs); through the OS cache, the
  // kernel's count of the process's block reads is all there is.
  const double counted = storage.empty() ? 0 : storage.back();
  result.read_bytes_per_epoch =
      (counted > 0 ? counted : static_cast<double>(child.storage_read_bytes)) / epochs;
  return result;
}

// A stable name for a cell's run folder: FNV-1a of its key, in hex.
std::string cell_hash(const std::string& key) {
  Fnv1a hash;
  hash.add(key);
  return hash.hex();
}

// One training cell: `ffcv run` in a folder of its own (an unfinished one starts over).
CellResult measure_training(const AblationCell& cell, const std::string& dataset,
                            const AblationRunOptions& options, bool& interrupted) {
  CellResult result;
  result.key = stored_key(cell);
  const fs::path folder = fs::path(options.output_dir) / "runs" / ("cell-" + cell_hash(result.key));
  std::error_code error;
  fs::remove_all(folder, error);
  fs::create_directories(folder.parent_path());
  std::vector<std::string> arguments{"run", cell.recipe_path, "--output-dir", folder.string()};
  for (const std::string& value : recipe_overrides(cell)) {
    arguments.insert(arguments.end(), {"--set", value});
  }
  if (!dataset.empty()) arguments.insert(arguments.end(), {"--set", "data.train=" + dataset});
  const ChildResult child = run_child(options.ffcv_program, arguments);
  if (child.interrupted) {
    interrupted = true;
    return result;
  }
  result.seconds = child.seconds;
  result.peak_rss_bytes = child.peak_rss_bytes;
  if (!dataset.empty()) {
    const auto size = fs::file_size(dataset, error);
    result.file_bytes = error ? 0 : size;
  }
  if (child.status != 0) {
    // The run's own error line (its stdout ends with the folder it trained in).
    result.error = error_line(child);
    if (result.error.empty())
      result.error = "ffcv run exited with status " + std::to_string(child.status);
    return result;
  }
  const train::RunResults run = train::read_run_results(folder.string());
  if (run.state != train::RunState::kFinished) {
    result.error = "the run left no finished summary in " + folder.string();
    return result;
  }
  result.ok = true;
  result.val_top1 = run.val_top1;
  result.samples_per_s = run.images_per_second;
  result.loader_wait_share = run.loader_wait_share;
  result.read_bytes_per_epoch =
      run.epochs_logged == 0
          ? 0
          : static_cast<double>(child.storage_read_bytes) / static_cast<double>(run.epochs_logged);
  return result;
}

}  // namespace

std::vector<CellResult> read_cell_results(const std::string& cells_tsv) {
  std::map<std::string, CellResult> by_key;
  std::vector<std::string> order;
  std::ifstream in(cells_tsv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    for (std::string field; std::getline(stream, field, '\t');) fields.push_back(field);
    if (fields.size() != 11) continue;  // a line cut short by a crash: that cell runs again
    CellResult r;
    r.key = fields[0];
    r.ok = fields[1] == "ok";
    r.error = fields[2];
    r.samples_per_s = std::strtod(fields[3].c_str(), nullptr);
    r.seconds = std::strtod(fields[4].c_str(), nullptr);
    r.peak_rss_bytes = std::strtoull(fields[5].c_str(), nullptr, 10);
    r.file_bytes = std::strtoull(fields[6].c_str(), nullptr, 10);
    r.read_bytes_per_epoch = std::strtod(fields[7].c_str(), nullptr);
    r.loader_wait_share = std::strtod(fields[8].c_str(), nullptr);
    r.distinct_pages_per_batch = std::strtod(fields[9].c_str(), nullptr);
    r.val_top1 = std::strtod(fields[10].c_str(), nullptr);
    if (!by_key.count(r.key)) order.push_back(r.key);
    by_key[r.key] = r;
  }
  std::vector<CellResult> results;
  for (const std::string& key : order) results.push_back(by_key[key]);
  return results;
}

AblationOutcome run_ablation(const AblationSpec& spec, const std::vector<AblationCell>& cells,
                             const AblationRunOptions& options) {
  fs::create_directories(options.output_dir);
  const std::string cells_tsv = (fs::path(options.output_dir) / "cells.tsv").string();
  // Finished cells are reused; a cell that failed runs again (its cause may be fixed).
  std::map<std::string, CellResult> done;
  std::set<std::string> failed;
  for (CellResult& r : read_cell_results(cells_tsv)) {
    if (r.ok) {
      done[r.key] = std::move(r);
    } else {
      failed.insert(r.key);
    }
  }
  std::uint64_t failed_before = 0;
  for (const AblationCell& cell : cells) failed_before += failed.count(stored_key(cell));

  AblationOutcome outcome;
  std::uint64_t to_run = 0;
  for (const AblationCell& cell : cells) to_run += done.count(stored_key(cell)) == 0;
  outcome.reused = cells.size() - to_run;
  if (outcome.reused > 0 || failed_before > 0) {
    say(options,
        std::to_string(outcome.reused) + " of " + std::to_string(cells.size()) +
            " cells measured before (" + cells_tsv + "); running " + std::to_string(to_run) +
            (failed_before > 0 ? ", of which " + std::to_string(failed_before) + " failed before"
                               : ""));
  }
  // Held for the whole sweep: a signal between two cells stops the sweep as one during a cell
  // does (each cell's child runs under a nested watch).
  const InterruptWatch watch;
  std::uint64_t index = 0;
  for (const AblationCell& cell : cells) {
    ++index;
    if (auto it = done.find(stored_key(cell)); it != done.end()) {
      outcome.results.push_back(it->second);
      continue;
    }
    bool interrupted = watch.signal() != 0;
    const bool writes = !spec.dataset.source.empty();
    const std::string dataset =
        writes && !interrupted ? ensure_dataset(spec, cell, options, interrupted) : "";
    CellResult result;
    if (!interrupted) {
      result = spec.training() ? measure_training(cell, dataset, options, interrupted)
                               : measure(cell, dataset, options, interrupted);
    }
    if (interrupted) {
      outcome.interrupted = true;
      outcome.signal = watch.signal();
      say(options, "interrupted: the finished cells are kept in " + cells_tsv +
                       "; run the same command again to go on");
      return outcome;
    }
    append_durably(cells_tsv, tsv_line(result));
    char line[256];
    std::snprintf(line, sizeof line, "[%llu/%zu] %s: ", static_cast<unsigned long long>(index),
                  cells.size(), cell_label(spec, cell).c_str());
    std::string figures =
        std::to_string(static_cast<long long>(result.samples_per_s)) + " samples/s";
    if (result.val_top1 >= 0) {
      char top1[32];
      std::snprintf(top1, sizeof top1, ", val top-1 %.2f%%", 100 * result.val_top1);
      figures += top1;
    }
    say(options, std::string(line) + (result.ok ? figures : "failed: " + result.error));
    outcome.results.push_back(std::move(result));
  }
  return outcome;
}

}  // namespace ffcv::tools
