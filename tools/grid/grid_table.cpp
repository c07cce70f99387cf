#include "grid/grid_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/text_file.hpp"
#include "report/report_text.hpp"

namespace ffcv::tools {
namespace {

namespace fs = std::filesystem;

// The point's value of `key` as it was given, or "" (the recipe's own value) when not swept.
std::string value_of(const train::GridPoint& point, const std::string& key) {
  for (const std::string& o : point.overrides) {
    if (o.compare(0, key.size() + 1, key + "=") == 0) return o.substr(key.size() + 1);
  }
  return "";
}

std::string md_cell(std::string text) {
  std::replace(text.begin(), text.end(), '|', '/');
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// grid.csv: one line per point, in point order.
std::string grid_csv(const std::vector<std::string>& keys, const std::vector<GridRow>& rows) {
  std::string csv = "point";
  for (const std::string& key : keys) csv += "," + csv_field(key);
  csv +=
      ",state,val_top1,val_top5,val_loss,train_loss,epochs,train_seconds,images_per_second,"
      "loader_wait_share,threads,error\n";
  for (const GridRow& row : rows) {
    const train::RunResults& res = row.results;
    csv += std::to_string(row.point.index);
    for (const std::string& key : keys) csv += "," + csv_field(value_of(row.point, key));
    csv += std::string(",") + train::run_state_name(res.state);
    const std::string threads = row.threads > 0 ? std::to_string(row.threads) : "";
    if (res.state == train::RunState::kFinished) {
      csv += "," + printf_number(res.val_top1, "%.4f") + "," + printf_number(res.val_top5, "%.4f") +
             "," + printf_number(res.val_loss, "%.4f") + "," +
             printf_number(res.train_loss, "%.4f") + "," + std::to_string(res.epochs_done) + "," +
             printf_number(res.train_seconds, "%.2f") + "," +
             printf_number(res.images_per_second, "%.1f") + "," +
             printf_number(res.loader_wait_share, "%.4f") + "," + threads + ",\n";
    } else {
      csv += ",,,,,,,,," + threads + "," + csv_field(res.error) + "\n";
    }
  }
  return csv;
}

// grid.json: the keys, and one object per point, in point order.
std::string grid_json(const std::vector<std::string>& keys, const std::vector<GridRow>& rows) {
  std::string json = "{\"keys\": [";
  for (std::size_t k = 0; k < keys.size(); ++k) json += (k ? ", " : "") + json_quote(keys[k]);
  json += "], \"points\": [";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const GridRow& row = rows[r];
    const train::RunResults& res = row.results;
    json += std::string(r ? ",\n  " : "\n  ") + "{\"point\": " + std::to_string(row.point.index) +
            ", \"folder\": " + json_quote(row.point.folder) + ", \"values\": {";
    for (std::size_t k = 0; k < keys.size(); ++k) {
      json +=
          (k ? ", " : "") + json_quote(keys[k]) + ": " + json_quote(value_of(row.point, keys[k]));
    }
    json += std::string("}, \"state\": \"") + train::run_state_name(res.state) + "\"";
    json += ", \"threads\": " + std::to_string(row.threads);
    if (res.state == train::RunState::kFinished) {
      json += ", \"val_top1\": " + json_number(res.val_top1, 4) +
              ", \"val_top5\": " + json_number(res.val_top5, 4) +
              ", \"val_loss\": " + json_number(res.val_loss, 4) +
              ", \"train_loss\": " + json_number(res.train_loss, 4) +
              ", \"epochs\": " + std::to_string(res.epochs_done) +
              ", \"train_seconds\": " + json_number(res.train_seconds, 2) +
              ", \"images_per_second\": " + json_number(res.images_per_second, 1) +
              ", \"loader_wait_share\": " + json_number(res.loader_wait_share, 4) + "}";
    } else {
      json += res.error.empty() ? "}" : ", \"error\": " + json_quote(res.error) + "}";
    }
  }
  json += "\n]}\n";
  return json;
}

// grid.md: finished points best first, then the others in point order.
std::string grid_markdown(const std::vector<std::string>& keys, const std::vector<GridRow>& rows,
                          const std::string& command_line) {
  std::vector<const GridRow*> order;
  for (const GridRow& row : rows) order.push_back(&row);
  std::stable_sort(order.begin(), order.end(), [](const GridRow* a, const GridRow* b) {
    const bool fa = a->results.state == train::RunState::kFinished;
    const bool fb = b->results.state == train::RunState::kFinished;
    if (fa != fb) return fa;
    return fa && a->results.val_top1 > b->results.val_top1;
  });
  std::size_t finished = 0;
  for (const GridRow& row : rows) finished += row.results.state == train::RunState::kFinished;
  std::string md = "# Grid: " + std::to_string(rows.size()) + " points, " +
                   std::to_string(finished) + " finished\n\n";
  md += "Command: `" + command_line + "`  \nMachine: " + machine_text() + "\n\n| point |";
  for (const std::string& key : keys) md += " " + md_cell(key) + " |";
  md +=
      " state | threads | val top-1 | val top-5 | epochs | train s | images/s | loader wait "
      "|\n|---|";
  for (std::size_t k = 0; k < keys.size(); ++k) md += "---|";
  md += "---|---|---|---|---|---|---|---|\n";
  for (const GridRow* row : order) {
    const train::RunResults& res = row->results;
    md += "| " + std::to_string(row->point.index) + " |";
    for (const std::string& key : keys) md += " " + md_cell(value_of(row->point, key)) + " |";
    const std::string threads = row->threads > 0 ? std::to_string(row->threads) : "";
    if (res.state == train::RunState::kFinished) {
      md += " finished | " + threads + " | " + printf_number(100 * res.val_top1, "%.2f") + "% | " +
            printf_number(100 * res.val_top5, "%.2f") + "% | " + std::to_string(res.epochs_done) +
            " | " + printf_number(res.train_seconds, "%.1f") + " | " +
            printf_number(res.images_per_second, "%.0f") + " | " +
            printf_number(100 * res.loader_wait_share, "%.0f") + "% |\n";
    } else {
      md += std::string(" ") + train::run_state_name(res.state) +
            (res.error.empty() ? "" : ": " + md_cell(res.error)) + " | " + threads +
            " | | | | | | |\n";
    }
  }
  return md;
}

}  // namespace

int logged_threads(const std::string& dir) {
  const std::string log = read_text_if_present((fs::path(dir) / "log.jsonl").string());
  const std::size_t start = log.rfind("\"event\": \"start\"");
  if (start == std::string::npos) return 0;
  const std::string key = "\"threads\": ";
  const std::size_t at = log.find(key, start);
  if (at == std::string::npos || at > log.find('\n', start)) return 0;
  return std::atoi(log.c_str() + at + key.size());
}

std::vector<GridRow> gather_grid(const std::string& grid_dir,
                                 const std::vector<train::GridPoint>& points) {
  std::vector<GridRow> rows;
  for (const train::GridPoint& point : points) {
    const std::string dir = (fs::path(grid_dir) / point.folder).string();
    rows.push_back({point, train::read_run_results(dir), logged_threads(dir)});
  }
  return rows;
}

std::vector<std::string> write_grid_tables(const std::string& grid_dir,
                                           const std::vector<std::string>& keys,
                                           const std::vector<GridRow>& rows,
                                           const std::string& command_line) {
  const std::string csv = grid_csv(keys, rows);
  const std::string json = grid_json(keys, rows);
  const std::string md = grid_markdown(keys, rows, command_line);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"grid.csv", csv}, {"grid.json", json}, {"grid.md", md}};
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = (fs::path(grid_dir) / name).string();
    // A swept data URL's password stays out of the tables (url_credentials.hpp).
    write_file_atomically(path, std::string_view(redact_url_passwords(text)));
    written.push_back(path);
  }
  return written;
}

}  // namespace ffcv::tools
