// ffcv_interop_write OUTPUT_DIR
//
// Writes, with our DatasetWriter, a set of small .beton files that together use every field type
// and every image write mode, plus manifest.json describing what each file must hold. The Python
// side (check_ours_with_ffcv.py) reads them with Python FFCV and compares against the manifest.
// Values are deterministic functions of the sample index (see formulas.hpp / formulas.py); the
// manifest lists scalars, JSON texts, lengths and image sizes explicitly and names the formula
// for pixels and array elements.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/util/json_text.hpp"
#include "formulas.hpp"

namespace {

using ffcv::FieldValue;

// One field of one file: how to make sample i's value, and its manifest entry.
struct FieldSpec {
  std::string name;
  ffcv::FieldPtr field;
  std::function<FieldValue(std::uint64_t)> value;
  std::function<std::string(std::uint64_t num_samples)> manifest;  // a JSON object
};

struct FileSpec {
  std::string file;
  std::uint64_t num_samples = 0;
  std::uint64_t page_size = ffcv::kDefaultPageSize;
  int batch_size = 1;  // for the Python Loader; chosen not to divide num_samples
  std::vector<FieldSpec> fields;
};

class SpecSource final : public ffcv::SampleSource {
 public:
  explicit SpecSource(const FileSpec& spec) : spec_(spec) {}
  std::uint64_t size() const override { return spec_.num_samples; }
  std::vector<FieldValue> load(std::uint64_t index) const override {
    std::vector<FieldValue> values;
    for (const FieldSpec& field : spec_.fields) values.push_back(field.value(index));
    return values;
  }

 private:
  const FileSpec& spec_;
};

// A double as JSON that Python parses back to the same bits (a float, never an int).
std::string json_double(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string result = text;
  if (result.find_first_of(".eE") == std::string::npos) result += ".0";
  return result;
}

template <typename F>
std::string json_list(std::uint64_t n, F item) {
  std::string text = "[";
  for (std::uint64_t i = 0; i < n; ++i) text += (i ? ", " : "") + item(i);
  return text + "]";
}

std::string head(const std::string& name, const std::string& type) {
  return "{\"name\": " + ffcv::json_quote(name) + ", \"type\": \"" + type + "\"";
}

FieldSpec int_field(const std::string& name, std::function<std::int64_t(std::uint64_t)> fn) {
  return {name, std::make_shared<ffcv::IntField>(),
          [fn](std::uint64_t i) { return FieldValue{fn(i)}; },
          [name, fn](std::uint64_t n) {
            return head(name, "Int") + ", \"values\": " +
                   json_list(n, [&](std::uint64_t i) { return std::to_string(fn(i)); }) + "}";
          }};
}

FieldSpec float_field(const std::string& name, std::function<double(std::uint64_t)> fn) {
  return {name, std::make_shared<ffcv::FloatField>(),
          [fn](std::uint64_t i) { return FieldValue{fn(i)}; },
          [name, fn](std::uint64_t n) {
            return head(name, "Float") + ", \"values\": " +
                   json_list(n, [&](std::uint64_t i) { return json_double(fn(i)); }) + "}";
          }};
}

FieldSpec array_field(const std::string& name, const std::string& typestr,
                      std::vector<std::uint64_t> shape, const std::string& formula = "nd_code") {
  const ffcv::DType dtype = ffcv::DType::parse(typestr);
  std::uint64_t count = 1;
  for (std::uint64_t d : shape) count *= d;
  return {name, std::make_shared<ffcv::NdArrayField>(dtype, shape),
          [=](std::uint64_t i) {
            return FieldValue{
                ffcv::NdArray{dtype, shape, interop::make_array_bytes(formula, dtype, i, count)}};
          },
          [=](std::uint64_t) {
            return head(name, "NDArray") + ", \"dtype\": \"" + dtype.typestr() + "\", \"shape\": " +
                   json_list(shape.size(),
                             [&](std::uint64_t d) { return std::to_string(shape[d]); }) +
                   ", \"formula\": \"" + formula + "\"}";
          }};
}

FieldSpec bytes_field(const std::string& name, std::function<std::uint64_t(std::uint64_t)> length) {
  return {name, std::make_shared<ffcv::BytesField>(),
          [length](std::uint64_t i) { return FieldValue{interop::make_bytes(i, length(i))}; },
          [name, length](std::uint64_t n) {
            return head(name, "Bytes") + ", \"formula\": \"bytes_code\", \"lengths\": " +
                   json_list(n, [&](std::uint64_t i) { return std::to_string(length(i)); }) + "}";
          }};
}

FieldSpec json_field(const std::string& name, std::function<std::string(std::uint64_t)> text) {
  return {name, std::make_shared<ffcv::JsonField>(),
          [text](std::uint64_t i) { return FieldValue{ffcv::JsonText{text(i)}}; },
          [name, text](std::uint64_t n) {
            return head(name, "JSON") + ", \"texts\": " +
                   json_list(n, [&](std::uint64_t i) { return ffcv::json_quote(text(i)); }) + "}";
          }};
}

struct Size {
  int width;
  int height;
};

// `jpeg_mae`: the largest mean absolute error a JPEG sample may have against the formula.
FieldSpec image_field(const std::string& name, ffcv::RgbImageOptions options,
                      const std::string& formula, std::function<Size(std::uint64_t)> size,
                      double jpeg_mae = 3.0) {
  return {name, std::make_shared<ffcv::RgbImageField>(options),
          [formula, size](std::uint64_t i) {
            const Size s = size(i);
            return FieldValue{interop::make_image(formula, i, s.width, s.height)};
          },
          [=](std::uint64_t n) {
            return head(name, "RGBImage") + ", \"write_mode\": \"" +
                   ffcv::image_write_mode_name(options.write_mode) + "\", \"formula\": \"" +
                   formula + "\", \"jpeg_mae\": " + json_double(jpeg_mae) + ", \"sizes\": " +
                   json_list(n,
                             [&](std::uint64_t i) {
                               const Size s = size(i);
                               return "[" + std::to_string(s.width) + ", " +
                                      std::to_string(s.height) + "]";
                             }) +
                   "}";
          }};
}

ffcv::RgbImageOptions mode(ffcv::ImageWriteMode write_mode) {
  ffcv::RgbImageOptions options;
  options.write_mode = write_mode;
  options.jpeg_quality = 90;
  options.compress_probability = 0.5;
  return options;
}

std::int64_t label(std::uint64_t i) { return static_cast<std::int64_t>(i) * 7 - 3; }

std::string sample_json(std::uint64_t i) {
  std::string text = "{\"index\": " + std::to_string(i) + ", \"name\": \"sample-" +
                     std::to_string(i) + "\", \"squares\": [" + std::to_string(i) + ", " +
                     std::to_string(i * i) + "], \"half\": " + json_double(i / 2.0) +
                     ", \"flag\": " + (i % 2 ? "true" : "false");
  if (i % 3 == 0) text += ", \"note\": \"caf\xc3\xa9 \\\"quoted\\\" back\\\\slash\\ttab\"";
  if (i % 5 == 1) text += ", \"nested\": {\"empty\": [], \"none\": null}";
  return text + "}";
}

std::vector<FileSpec> file_specs() {
  using ffcv::ImageWriteMode;
  std::vector<FileSpec> files;

  // Scalars only: no heap at all, so no pages and an empty allocation table.
  files.push_back({"scalars.beton",
                   37,
                   ffcv::kDefaultPageSize,
                   5,
                   {int_field("label",
                              [](std::uint64_t i) -> std::int64_t {
                                if (i == 1) return std::numeric_limits<std::int64_t>::max();
                                if (i == 2) return std::numeric_limits<std::int64_t>::min();
                                return label(i);
                              }),
                    float_field("score", [](std::uint64_t i) {
                      if (i == 3) return -0.0;
                      if (i == 4) return std::numeric_limits<double>::denorm_min();
                      if (i == 5) return std::numeric_limits<double>::max();
                      return std::sin(static_cast<double>(i)) * std::pow(10.0, int(i % 11) - 5);
                    })}});

  files.push_back({"ndarrays.beton",
                   50,
                   ffcv::kDefaultPageSize,
                   7,
                   {array_field("a_f4", "<f4", {3, 4}), array_field("a_u1", "|u1", {16}),
                    array_field("a_i8", "<i8", {5}), array_field("a_b1", "|b1", {7}),
                    array_field("a_f2", "<f2", {2, 2, 2}), array_field("a_i4", "<i4", {2, 3}),
                    array_field("a_u2", "<u2", {3}), array_field("a_f8", "<f8", {1}),
                    array_field("a_i1", "|i1", {2, 1, 3})}});

  files.push_back({"bytes_json.beton",
                   45,
                   ffcv::kDefaultPageSize,
                   8,
                   {int_field("id", label),
                    bytes_field("blob",
                                [](std::uint64_t i) -> std::uint64_t {
                                  return i % 10 == 9 ? 5000 + i : 1 + (i * 37) % 300;
                                }),
                    json_field("meta", sample_json)}});

  files.push_back({"images_raw.beton",
                   30,
                   ffcv::kDefaultPageSize,
                   4,
                   {image_field("image", mode(ImageWriteMode::kRaw), "pix",
                                [](std::uint64_t i) {
                                  return Size{5 + int(i * 7 % 29), 4 + int(i * 5 % 19)};
                                }),
                    int_field("label", label)}});

  files.push_back({"images_jpg.beton",
                   24,
                   ffcv::kDefaultPageSize,
                   5,
                   {int_field("label", label),
                    image_field("image", mode(ImageWriteMode::kJpg), "smooth", [](std::uint64_t) {
                      return Size{64, 48};
                    })}});

  files.push_back({"images_proportion.beton",
                   40,
                   ffcv::kDefaultPageSize,
                   6,
                   {image_field("image", mode(ImageWriteMode::kProportion), "smooth",
                                [](std::uint64_t i) {
                                  return Size{16 + int(i * 11 % 40), 12 + int(i * 13 % 30)};
                                }),
                    int_field("label", label)}});

  // Every field type in one record, in an order that needs alignment padding (13-byte image
  // columns before 8-byte ones), and a 16-byte field name (stored without a NUL).
  files.push_back(
      {"all_fields.beton",
       33,
       ffcv::kDefaultPageSize,
       10,
       {image_field("image", mode(ImageWriteMode::kRaw), "pix",
                    [](std::uint64_t) {
                      return Size{20, 12};
                    }),
        int_field("label", label), bytes_field("blob", [](std::uint64_t i) { return 1 + i * 3; }),
        float_field("x", [](std::uint64_t i) { return i * 0.5 - 4.25; }),
        array_field("arr", "<f4", {3}), json_field("meta", sample_json),
        image_field("photo", mode(ImageWriteMode::kJpg), "smooth",
                    [](std::uint64_t) {
                      return Size{32, 32};
                    }),
        int_field("field_name_16chr", [](std::uint64_t i) { return std::int64_t(i) * -11; })}});

  // A 2 MiB page size with enough data (about 137 KB a sample) to fill several pages.
  files.push_back({"paged_2mib.beton",
                   60,
                   std::uint64_t{2} << 20,
                   7,
                   {image_field("image", mode(ImageWriteMode::kRaw), "pix",
                                [](std::uint64_t) {
                                  return Size{160, 120};
                                }),
                    array_field("vec", "<f4", {20000}), int_field("label", label)}});
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUTPUT_DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const std::vector<FileSpec> files = file_specs();
    std::string manifest = "{\"files\": [\n";
    for (std::size_t f = 0; f < files.size(); ++f) {
      const FileSpec& spec = files[f];
      std::vector<ffcv::NamedField> fields;
      for (const FieldSpec& field : spec.fields) fields.push_back({field.name, field.field});
      ffcv::WriterOptions options;
      options.page_size = spec.page_size;
      options.num_workers = 2;
      options.seed = 12345;
      ffcv::DatasetWriter writer((dir / spec.file).string(), fields, options);
      const ffcv::WriteSummary summary = writer.write(SpecSource(spec));
      std::cout << spec.file << ": " << summary.num_samples << " samples, " << summary.num_pages
                << " pages of " << summary.page_size << " bytes, " << summary.file_size
                << " bytes\n";
      if (summary.page_size != spec.page_size) {
        std::cerr << spec.file << ": the writer grew the page size, which Python FFCV never does\n";
        return 1;
      }
      manifest += std::string(f ? ",\n" : "") + "{\"file\": " + ffcv::json_quote(spec.file) +
                  ", \"num_samples\": " + std::to_string(spec.num_samples) +
                  ", \"page_size\": " + std::to_string(spec.page_size) +
                  ", \"batch_size\": " + std::to_string(spec.batch_size) + ", \"fields\": [\n";
      for (std::size_t k = 0; k < spec.fields.size(); ++k) {
        manifest += std::string(k ? ",\n" : "") + "  " + spec.fields[k].manifest(spec.num_samples);
      }
      manifest += "]}";
    }
    manifest += "\n]}\n";
    std::ofstream out(dir / "manifest.json", std::ios::binary);
    out << manifest;
    if (!out.flush()) {
      std::cerr << "cannot write " << (dir / "manifest.json").string() << "\n";
      return 1;
    }
    std::cout << "wrote " << files.size() << " files and manifest.json to " << dir.string() << "\n";
  } catch (const std::exception& error) {
    std::cerr << "ffcv_interop_write: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
