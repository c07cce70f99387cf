#include "ablate/ablation_report.hpp"

#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/child_process.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/json_text.hpp"
#include "report/report_text.hpp"

namespace ffcv::tools {
namespace {

namespace fs = std::filesystem;

// A cell's bytes read per epoch over the file's size, or 0 without a file.
double read_per_file(const CellResult& r) {
  return r.file_bytes > 0 ? r.read_bytes_per_epoch / static_cast<double>(r.file_bytes) : 0;
}

// ablation.csv: one line per cell.
std::string ablation_csv(const AblationSpec& spec, const std::vector<AblationCell>& cells,
                         const std::vector<CellResult>& results) {
  std::string header;
  for (const SweepAxis& axis : spec.axes) header += axis.key + ",";
  std::string csv = header +
                    "status,samples_per_s,peak_rss_bytes,file_bytes,read_bytes_per_epoch,"
                    "read_per_file,loader_wait_share,distinct_pages_per_batch,seconds,val_top1,"
                    "error\n";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const CellResult& r = results[i];
    std::string values_csv;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      values_csv += csv_field(cells[i].axis_values[a].text) + ",";
    }
    if (r.ok) {
      csv += values_csv + "ok," + printf_number(r.samples_per_s) + "," +
             std::to_string(r.peak_rss_bytes) + "," + std::to_string(r.file_bytes) + "," +
             printf_number(r.read_bytes_per_epoch, "%.0f") + "," +
             printf_number(read_per_file(r), "%.4f") + "," +
             printf_number(r.loader_wait_share, "%.4f") + "," +
             printf_number(r.distinct_pages_per_batch, "%.3f") + "," +
             printf_number(r.seconds, "%.3f") + "," +
             (r.val_top1 >= 0 ? printf_number(r.val_top1, "%.4f") : std::string()) + ",\n";
    } else {
      csv += values_csv + "failed,,,,,,,,,," + csv_field(r.error) + "\n";
    }
  }
  return csv;
}

// ablation.json: the spec's name and axes, and one object per cell.
std::string ablation_json(const AblationSpec& spec, const std::vector<AblationCell>& cells,
                          const std::vector<CellResult>& results) {
  std::string json = "{\"name\": " + json_quote(spec.name) +
                     ", \"spec\": " + json_quote(spec.path) + ", \"axes\": [";
  for (std::size_t a = 0; a < spec.axes.size(); ++a) {
    json += std::string(a ? ", " : "") + "{\"key\": " + json_quote(spec.axes[a].key) +
            ", \"values\": [";
    for (std::size_t v = 0; v < spec.axes[a].values.size(); ++v) {
      json += std::string(v ? ", " : "") + json_quote(spec.axes[a].values[v].text);
    }
    json += "]}";
  }
  json += "], \"cells\": [";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const CellResult& r = results[i];
    std::string values_json;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      values_json += std::string(a ? ", " : "") + json_quote(cells[i].axis_values[a].text);
    }
    json += std::string(i ? ", " : "") + "{\"values\": [" + values_json +
            "], \"ok\": " + (r.ok ? "true" : "false");
    if (r.ok) {
      json += ", \"samples_per_s\": " + json_number(r.samples_per_s, 1) +
              ", \"peak_rss_bytes\": " + std::to_string(r.peak_rss_bytes) +
              ", \"file_bytes\": " + std::to_string(r.file_bytes) +
              ", \"read_bytes_per_epoch\": " + json_number(r.read_bytes_per_epoch, 0) +
              ", \"loader_wait_share\": " + json_number(r.loader_wait_share, 4) +
              ", \"distinct_pages_per_batch\": " + json_number(r.distinct_pages_per_batch, 3) +
              ", \"seconds\": " + json_number(r.seconds, 3) +
              (r.val_top1 >= 0 ? ", \"val_top1\": " + json_number(r.val_top1, 4) : std::string()) +
              "}";
    } else {
      json += ", \"error\": " + json_quote(r.error) + "}";
    }
  }
  json += "]}\n";
  return json;
}

// ablation.md: the command and machine, one row per cell, and what the columns mean.
std::string ablation_markdown(const AblationSpec& spec, const std::vector<AblationCell>& cells,
                              const std::vector<CellResult>& results,
                              const std::string& command_line) {
  std::string md = "# Ablation: " + spec.name + "\n\nCommand: `" + command_line +
                   "`  \nMachine: " + machine_text() + "  \nSpec: `" + spec.path + "`\n\n|";
  for (const SweepAxis& axis : spec.axes) md += " " + axis.key + " |";
  const bool training = spec.training();
  md += std::string(training ? " val top-1 |" : "") +
        " samples/s | peak RSS | file | read / epoch | read / file | loader wait |\n|";
  for (std::size_t a = 0; a < spec.axes.size() + 6 + training; ++a) md += "---|";
  md += "\n";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const CellResult& r = results[i];
    std::string values_md;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      values_md += " " + cells[i].axis_values[a].text + " |";
    }
    if (r.ok) {
      md += "|" + values_md +
            (training ? " " + printf_number(100 * r.val_top1, "%.2f") + "% |" : std::string()) +
            " " + printf_number(r.samples_per_s, "%.0f") + " | " +
            byte_size_text(static_cast<double>(r.peak_rss_bytes)) + " | " +
            byte_size_text(static_cast<double>(r.file_bytes)) + " | " +
            byte_size_text(r.read_bytes_per_epoch) + " | " +
            printf_number(read_per_file(r), "%.2f") + " | " +
            printf_number(100 * r.loader_wait_share, "%.0f") + "% |\n";
    } else {
      md +=
          "|" + values_md + " failed: " + r.error + " | | | | | |" + (training ? " |" : "") + "\n";
    }
  }
  md +=
      "\nread / epoch: bytes read from storage per epoch (the process cache's own count; through "
      "the OS cache, the kernel's count of block reads, 0 when the file was cached). loader "
      "wait: the share of each epoch the consumer waited for batches (median epoch; for "
      "training cells, over the whole run). Training cells: samples/s is the run's training "
      "images/s, val top-1 its final validation accuracy.\n";
  return md;
}

}  // namespace

std::vector<std::string> write_ablation_tables(const AblationSpec& spec,
                                               const std::vector<AblationCell>& cells,
                                               const std::vector<CellResult>& results,
                                               const std::string& output_dir,
                                               const std::string& command_line) {
  const fs::path out(output_dir);
  const std::string csv = ablation_csv(spec, cells, results);
  const std::string json = ablation_json(spec, cells, results);
  const std::string md = ablation_markdown(spec, cells, results, command_line);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"ablation.csv", csv}, {"ablation.json", json}, {"ablation.md", md}};
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = (out / name).string();
    // A URL's password among the cells' values stays out of the tables (url_credentials.hpp).
    write_file_atomically(path, redact_url_passwords(text));
    written.push_back(path);
  }
  return written;
}

}  // namespace ffcv::tools
