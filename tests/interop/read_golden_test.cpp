// Reads the golden .beton files that Python FFCV's DatasetWriter wrote (tests/interop/
// make_golden.py) and checks every sample's values against the expectations beside them.
//
// The directory comes from the environment variable FFCV_GOLDEN_DIR, by default the committed
// tests/golden. It holds index.json (the golden names) and, per name, NAME.beton.gz and
// NAME.json (page size, sample count, fields in order with explicit values or the formula of
// formulas.hpp and its parameters). Each file is gunzipped into a temporary directory, opened
// with ffcv::Reader (which validates every table) and decoded sample by sample.
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "formulas.hpp"
#include "mini_json.hpp"

namespace fs = std::filesystem;
using interop::Json;

namespace {

fs::path golden_dir() {
  if (const char* dir = std::getenv("FFCV_GOLDEN_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return FFCV_GOLDEN_DIR_DEFAULT;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Json read_json(const fs::path& path) {
  try {
    return Json::parse(read_text(path));
  } catch (const std::exception& error) {
    throw std::runtime_error(path.string() + ": " + error.what());
  }
}

// A fresh directory under the system temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ffcv_golden_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void gunzip(const fs::path& source, const fs::path& target) {
  gzFile in = gzopen(source.c_str(), "rb");
  if (in == nullptr) throw std::runtime_error("cannot open " + source.string());
  std::FILE* out = std::fopen(target.c_str(), "wb");
  if (out == nullptr) {
    gzclose(in);
    throw std::runtime_error("cannot create " + target.string());
  }
  std::vector<char> buffer(1 << 20);
  int got = 0;
  bool ok = true;
  while ((got = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0) {
    if (std::fwrite(buffer.data(), 1, static_cast<std::size_t>(got), out) !=
        static_cast<std::size_t>(got)) {
      ok = false;
      break;
    }
  }
  int gz_error = Z_OK;
  const char* gz_message = gzerror(in, &gz_error);
  const std::string message = gz_message ? gz_message : "";
  const bool failed_read = got < 0 || (gz_error != Z_OK && gz_error != Z_STREAM_END);
  gzclose(in);
  if (std::fclose(out) != 0) ok = false;
  if (failed_read) throw std::runtime_error("cannot gunzip " + source.string() + ": " + message);
  if (!ok) throw std::runtime_error("cannot write " + target.string());
}

std::uint8_t type_id_of(const std::string& type) {
  static const std::map<std::string, std::uint8_t> kIds = {
      {"Float", 0},   {"Int", 1},  {"RGBImage", 2},   {"Bytes", 3},
      {"NDArray", 4}, {"JSON", 5}, {"TorchTensor", 6}};
  const auto it = kIds.find(type);
  if (it == kIds.end()) throw std::runtime_error("unknown field type '" + type + "'");
  return it->second;
}

// Index of the first differing byte, or -1 when equal (sizes must match too).
long first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  if (a.size() != b.size()) return static_cast<long>(std::min(a.size(), b.size()));
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] != b[k]) return static_cast<long>(k);
  }
  return -1;
}

double mean_absolute_error(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  double sum = 0;
  for (std::size_t k = 0; k < a.size(); ++k) sum += std::abs(int(a[k]) - int(b[k]));
  return a.empty() ? 0 : sum / static_cast<double>(a.size());
}

std::uint64_t bits_of(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// What one golden file's checks saw, for the coverage check across all files.
struct Coverage {
  std::set<std::string> kinds;  // field types, and RGBImage/raw, RGBImage/jpg by stored mode
  std::set<std::uint64_t> page_sizes;
  double worst_jpeg_mae = 0;
};

void check_field(const ffcv::Reader& reader, std::size_t f, const Json& expected,
                 Coverage& coverage) {
  const std::string type = expected["type"].as_string();
  const std::string& name = expected["name"].as_string();
  INFO("field '" << name << "' (" << type << ")");
  REQUIRE(reader.fields()[f].name == name);
  REQUIRE(int(reader.descriptors()[f].type_id) == int(type_id_of(type)));
  coverage.kinds.insert(type);
  const std::uint64_t n = reader.num_samples();

  if (type == "Int" || type == "Float") {
    REQUIRE(expected["values"].size() == n);
    for (std::uint64_t i = 0; i < n; ++i) {
      INFO("sample " << i);
      const ffcv::FieldValue value = reader.decode(i, f);
      if (type == "Int") {
        REQUIRE(std::holds_alternative<std::int64_t>(value));
        CHECK(std::get<std::int64_t>(value) == expected["values"][i].as_int());
      } else {
        REQUIRE(std::holds_alternative<double>(value));
        INFO("expected " << expected["values"][i].number_text());
        CHECK(bits_of(std::get<double>(value)) == bits_of(expected["values"][i].as_double()));
      }
    }
  } else if (type == "NDArray" || type == "TorchTensor") {
    const ffcv::DType dtype = ffcv::DType::parse(expected["dtype"].as_string());
    std::vector<std::uint64_t> shape;
    std::uint64_t count = 1;
    for (const Json& d : expected["shape"].items()) {
      shape.push_back(d.as_uint());
      count *= d.as_uint();
    }
    const auto* field = dynamic_cast<const ffcv::NdArrayField*>(reader.fields()[f].field.get());
    REQUIRE(field != nullptr);
    CHECK(field->dtype().typestr() == dtype.typestr());
    CHECK(field->shape() == shape);
    const std::string formula = expected["formula"].as_string();
    for (std::uint64_t i = 0; i < n; ++i) {
      INFO("sample " << i);
      const ffcv::FieldValue value = reader.decode(i, f);
      REQUIRE(std::holds_alternative<ffcv::NdArray>(value));
      const auto& array = std::get<ffcv::NdArray>(value);
      CHECK(array.dtype.typestr() == dtype.typestr());
      CHECK(array.shape == shape);
      CHECK(first_difference(array.bytes, interop::make_array_bytes(formula, dtype, i, count)) ==
            -1);
    }
  } else if (type == "Bytes") {
    REQUIRE(expected["lengths"].size() == n);
    for (std::uint64_t i = 0; i < n; ++i) {
      INFO("sample " << i);
      const ffcv::FieldValue value = reader.decode(i, f);
      REQUIRE(std::holds_alternative<ffcv::Bytes>(value));
      CHECK(first_difference(std::get<ffcv::Bytes>(value),
                             interop::make_bytes(i, expected["lengths"][i].as_uint())) == -1);
    }
  } else if (type == "JSON") {
    REQUIRE(expected["texts"].size() == n);
    for (std::uint64_t i = 0; i < n; ++i) {
      INFO("sample " << i);
      const ffcv::FieldValue value = reader.decode(i, f);
      REQUIRE(std::holds_alternative<ffcv::JsonText>(value));
      CHECK(std::get<ffcv::JsonText>(value).text == expected["texts"][i].as_string());
    }
  } else if (type == "RGBImage") {
    REQUIRE(expected["sizes"].size() == n);
    const std::string write_mode = expected["write_mode"].as_string();
    const std::string formula = expected["formula"].as_string();
    const double tolerance = expected["jpeg_mae"].as_double();
    std::set<ffcv::StoredImageMode> modes;
    for (std::uint64_t i = 0; i < n; ++i) {
      INFO("sample " << i);
      const int width = static_cast<int>(expected["sizes"][i][0].as_int());
      const int height = static_cast<int>(expected["sizes"][i][1].as_int());
      const auto stored = ffcv::ImageMetadata::load(reader.column(i, f));
      modes.insert(stored.mode);
      if (write_mode == "raw") CHECK(stored.mode == ffcv::StoredImageMode::kRaw);
      if (write_mode == "jpg") CHECK(stored.mode == ffcv::StoredImageMode::kJpg);
      const ffcv::FieldValue value = reader.decode(i, f);
      REQUIRE(std::holds_alternative<ffcv::RgbImage>(value));
      const auto& image = std::get<ffcv::RgbImage>(value);
      REQUIRE(image.width == width);
      REQUIRE(image.height == height);
      const ffcv::RgbImage want = interop::make_image(formula, i, width, height);
      if (stored.mode == ffcv::StoredImageMode::kRaw) {
        coverage.kinds.insert("RGBImage/raw");
        CHECK(first_difference(image.pixels, want.pixels) == -1);
      } else {
        coverage.kinds.insert("RGBImage/jpg");
        const double error = mean_absolute_error(image.pixels, want.pixels);
        coverage.worst_jpeg_mae = std::max(coverage.worst_jpeg_mae, error);
        CHECK(error <= tolerance);
      }
    }
    if (write_mode == "proportion") {
      CHECK(modes.size() == 2);  // both raw and JPEG samples
      coverage.kinds.insert("RGBImage/proportion");
    }
  } else {
    FAIL("unknown field type " << type);
  }
}

void check_golden(const fs::path& dir, const std::string& name, Coverage& coverage) {
  INFO("golden " << name);
  const Json expected = read_json(dir / (name + ".json"));
  const fs::path gz = dir / expected["file"].as_string();
  REQUIRE(fs::exists(gz));
  TempDir scratch;
  const fs::path beton = scratch.path() / (name + ".beton");
  gunzip(gz, beton);

  std::unique_ptr<ffcv::Reader> reader;
  try {
    reader = std::make_unique<ffcv::Reader>(beton.string());
  } catch (const ffcv::Error& error) {
    FAIL("our Reader rejects the file Python FFCV wrote: " << error.what());
  }
  CHECK(reader->header().version == ffcv::kFormatVersion);
  CHECK(reader->num_samples() == expected["num_samples"].as_uint());
  CHECK(reader->page_size() == expected["page_size"].as_uint());
  coverage.page_sizes.insert(reader->page_size());
  const Json& fields = expected["fields"];
  REQUIRE(reader->fields().size() == fields.size());

  // Every allocation is referenced by exactly one metadata pointer: Python FFCV drops the
  // records of a sample it retries on a fresh page (its abandoned bytes are not in the table).
  std::size_t references = 0;
  for (std::uint64_t i = 0; i < reader->num_samples(); ++i) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      references += reader->fields()[f].field->heap_refs(reader->column(i, f)).size();
    }
  }
  CHECK(references == reader->allocations().size());

  for (std::size_t f = 0; f < fields.size(); ++f) check_field(*reader, f, fields[f], coverage);
}

}  // namespace

TEST_CASE("golden files written by Python FFCV read back with the expected values") {
  const fs::path dir = golden_dir();
  INFO("golden directory " << dir.string());
  REQUIRE(fs::is_directory(dir));
  const Json index = read_json(dir / "index.json");
  const Json& names = index["goldens"];
  REQUIRE(names.size() > 0);

  Coverage coverage;
  for (const Json& name : names.items()) check_golden(dir, name.as_string(), coverage);

  // Together the goldens must keep covering every field type and both stored image modes, and
  // a page size other than the default.
  for (const char* kind : {"Int", "Float", "NDArray", "TorchTensor", "Bytes", "JSON", "RGBImage",
                           "RGBImage/raw", "RGBImage/jpg", "RGBImage/proportion"}) {
    INFO("coverage of " << kind);
    CHECK(coverage.kinds.count(kind) == 1);
  }
  CHECK(coverage.page_sizes.size() >= 2);
  std::cout << "golden files read: " << names.size()
            << ", worst JPEG mean absolute error: " << coverage.worst_jpeg_mae << "\n";
}

TEST_CASE("the golden directory lists exactly its golden files") {
  const fs::path dir = golden_dir();
  const Json index = read_json(dir / "index.json");
  std::set<std::string> listed;
  for (const Json& name : index["goldens"].items()) {
    listed.insert(name.as_string());
    CHECK(fs::exists(dir / (name.as_string() + ".json")));
    CHECK(fs::exists(dir / (name.as_string() + ".beton.gz")));
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file == "index.json") continue;
    std::string stem = file;
    for (const char* suffix : {".beton.gz", ".json"}) {
      const std::string s = suffix;
      if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0) {
        stem.resize(stem.size() - s.size());
      }
    }
    INFO("file " << file);
    CHECK(listed.count(stem) == 1);
  }
}
