#include "dataset_report.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/json_text.hpp"

namespace ffcv::tools {
namespace {

std::string histogram_json(const std::map<std::uint64_t, std::uint64_t>& histogram) {
  std::string out = "{";
  for (const auto& [start, count] : histogram) {
    out += (out.size() > 1 ? ", " : "") + json_quote(std::to_string(start)) + ": " +
           std::to_string(count);
  }
  return out + "}";
}

std::string histogram_text(const std::map<std::uint64_t, std::uint64_t>& histogram,
                           std::uint64_t total) {
  std::string out;
  for (const auto& [start, count] : histogram) {
    char line[128];
    const int bar = total ? static_cast<int>(40.0 * count / total + 0.5) : 0;
    std::snprintf(line, sizeof line, "      %5llu-%-5llu %8llu %s\n",
                  static_cast<unsigned long long>(start),
                  static_cast<unsigned long long>(start + kSizeBucket - 1),
                  static_cast<unsigned long long>(count), std::string(bar, '#').c_str());
    out += line;
  }
  return out;
}

}  // namespace

DatasetReport DatasetReport::build(const Reader& reader) {
  DatasetReport report;
  report.path = reader.path();
  report.file_size = reader.file_size();
  report.num_samples = reader.num_samples();
  report.page_size = reader.page_size();
  report.num_allocations = reader.allocations().size();
  report.record_size = reader.layout().record_size;
  std::set<std::uint64_t> pages;
  for (const AllocEntry& entry : reader.allocations()) pages.insert(entry.ptr / reader.page_size());
  report.num_pages = pages.size();

  for (std::size_t f = 0; f < reader.fields().size(); ++f) {
    const NamedField& named = reader.fields()[f];
    FieldReport field;
    field.name = named.name;
    field.type = named.field->type_name();
    if (const auto* array = dynamic_cast<const NdArrayField*>(named.field.get())) {
      field.args_summary = "dtype " + array->dtype().typestr() + ", shape (";
      for (std::size_t d = 0; d < array->shape().size(); ++d) {
        field.args_summary += (d ? ", " : "") + std::to_string(array->shape()[d]);
      }
      field.args_summary += array->shape().size() == 1 ? ",)" : ")";
    }
    const auto* ragged = dynamic_cast<const RaggedNdArrayField*>(named.field.get());
    std::uint64_t fewest_rows = ~std::uint64_t{0}, most_rows = 0, all_rows = 0;
    const bool is_image = dynamic_cast<const RgbImageField*>(named.field.get()) != nullptr;
    double sum_width = 0, sum_height = 0;
    for (std::uint64_t sample = 0; sample < reader.num_samples(); ++sample) {
      const std::uint8_t* column = reader.column(sample, f);
      if (ragged != nullptr) {
        const std::uint64_t rows = RaggedNdArrayField::rows(column);
        fewest_rows = std::min(fewest_rows, rows);
        most_rows = std::max(most_rows, rows);
        all_rows += rows;
      }
      for (const HeapRef& ref : named.field->heap_refs(column)) {
        // The allocation's size, not its bytes: a remote file is not fetched for a report.
        field.heap_bytes += reader.find_allocation(ref.ptr)->size;
      }
      if (!is_image) continue;
      const ImageMetadata image = ImageMetadata::load(column);
      ++field.image_modes[image.mode == StoredImageMode::kJpg ? "jpg" : "raw"];
      ++field.width_histogram[image.width / kSizeBucket * kSizeBucket];
      ++field.height_histogram[image.height / kSizeBucket * kSizeBucket];
      if (sample == 0) {
        field.min_width = field.max_width = image.width;
        field.min_height = field.max_height = image.height;
      }
      field.min_width = std::min<std::uint64_t>(field.min_width, image.width);
      field.max_width = std::max<std::uint64_t>(field.max_width, image.width);
      field.min_height = std::min<std::uint64_t>(field.min_height, image.height);
      field.max_height = std::max<std::uint64_t>(field.max_height, image.height);
      sum_width += image.width;
      sum_height += image.height;
    }
    if (ragged != nullptr && reader.num_samples() > 0) {
      char rows[160];
      std::snprintf(rows, sizeof rows, "rows of %s, %llu-%llu per sample (mean %.1f)",
                    ragged->row_text().c_str(), static_cast<unsigned long long>(fewest_rows),
                    static_cast<unsigned long long>(most_rows),
                    static_cast<double>(all_rows) / reader.num_samples());
      field.args_summary = rows;
    }
    if (is_image && reader.num_samples() > 0) {
      field.mean_width = sum_width / reader.num_samples();
      field.mean_height = sum_height / reader.num_samples();
    }
    report.fields.push_back(std::move(field));
  }
  return report;
}

std::string DatasetReport::to_text() const {
  char line[256];
  std::string out = path + "\n";
  std::snprintf(line, sizeof line,
                "  format version 2, %llu samples, %zu fields, record %llu bytes\n"
                "  file %s, page size %s, %llu data pages, %llu allocations\n",
                static_cast<unsigned long long>(num_samples), fields.size(),
                static_cast<unsigned long long>(record_size), byte_size_text(file_size).c_str(),
                byte_size_text(page_size).c_str(), static_cast<unsigned long long>(num_pages),
                static_cast<unsigned long long>(num_allocations));
  out += line;
  out += "  fields:\n";
  for (const FieldReport& field : fields) {
    std::snprintf(line, sizeof line, "    %-16s %-13s heap %s (%s per sample)%s%s\n",
                  field.name.c_str(), field.type.c_str(), byte_size_text(field.heap_bytes).c_str(),
                  byte_size_text(num_samples ? double(field.heap_bytes) / num_samples : 0).c_str(),
                  field.args_summary.empty() ? "" : ", ", field.args_summary.c_str());
    out += line;
    if (field.image_modes.empty()) continue;
    out += "      modes:";
    for (const auto& [mode, count] : field.image_modes) {
      out += " " + mode + " " + std::to_string(count);
    }
    std::snprintf(line, sizeof line,
                  "\n      width %llu..%llu (mean %.1f), height %llu..%llu (mean %.1f)\n",
                  static_cast<unsigned long long>(field.min_width),
                  static_cast<unsigned long long>(field.max_width), field.mean_width,
                  static_cast<unsigned long long>(field.min_height),
                  static_cast<unsigned long long>(field.max_height), field.mean_height);
    out += line;
    out +=
        "      width histogram (px, count):\n" + histogram_text(field.width_histogram, num_samples);
    out += "      height histogram (px, count):\n" +
           histogram_text(field.height_histogram, num_samples);
  }
  return out;
}

std::string DatasetReport::to_json() const {
  std::string out = "{\"path\": " + json_quote(path) + ", \"format_version\": 2" +
                    ", \"file_size\": " + std::to_string(file_size) +
                    ", \"num_samples\": " + std::to_string(num_samples) +
                    ", \"page_size\": " + std::to_string(page_size) +
                    ", \"num_pages\": " + std::to_string(num_pages) +
                    ", \"num_allocations\": " + std::to_string(num_allocations) +
                    ", \"record_size\": " + std::to_string(record_size) + ", \"fields\": [";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldReport& field = fields[i];
    out += std::string(i ? ", " : "") + "{\"name\": " + json_quote(field.name) +
           ", \"type\": " + json_quote(field.type) +
           ", \"heap_bytes\": " + std::to_string(field.heap_bytes);
    if (!field.args_summary.empty()) out += ", \"arguments\": " + json_quote(field.args_summary);
    if (!field.image_modes.empty()) {
      out += ", \"image_modes\": {";
      bool first = true;
      for (const auto& [mode, count] : field.image_modes) {
        out += (first ? "" : ", ") + json_quote(mode) + ": " + std::to_string(count);
        first = false;
      }
      char sizes[200];
      std::snprintf(sizes, sizeof sizes,
                    "}, \"width\": {\"min\": %llu, \"max\": %llu, \"mean\": %.3f}, "
                    "\"height\": {\"min\": %llu, \"max\": %llu, \"mean\": %.3f}",
                    static_cast<unsigned long long>(field.min_width),
                    static_cast<unsigned long long>(field.max_width), field.mean_width,
                    static_cast<unsigned long long>(field.min_height),
                    static_cast<unsigned long long>(field.max_height), field.mean_height);
      out += sizes;
      out += ", \"width_histogram\": " + histogram_json(field.width_histogram) +
             ", \"height_histogram\": " + histogram_json(field.height_histogram) +
             ", \"histogram_bucket_px\": " + std::to_string(kSizeBucket);
    }
    out += "}";
  }
  return out + "]}";
}

}  // namespace ffcv::tools
