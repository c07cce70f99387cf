#include "side_rows.hpp"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "common/arguments.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/format/npy_array.hpp"
#include "ffcv/util/errors.hpp"

#ifdef FFCV_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

namespace ffcv::tools {

std::pair<std::string, std::string> parse_rows_option(const std::string& text) {
  const std::size_t at = text.find('=');
  if (at == std::string::npos || at == 0 || at + 1 == text.size()) {
    throw UsageError("--rows takes NAME=FILE (FILE.jsonl, or VALUES.npy,OFFSETS.npy), got '" +
                     text + "'");
  }
  return {text.substr(0, at), text.substr(at + 1)};
}

std::vector<std::string> rows_files(const std::string& file) {
  const std::size_t comma = file.find(',');
  if (comma != std::string::npos && file.substr(0, comma).ends_with(".npy") &&
      file.ends_with(".npy")) {
    return {file.substr(0, comma), file.substr(comma + 1)};
  }
  return {file};
}

SideRows::SideRows(std::string name, const std::string& file)
    : name_(std::move(name)), file_(file) {
  const std::vector<std::string> files = rows_files(file);
  if (files.size() == 2) {
    read_npy_pair(files[0], files[1]);
  } else if (file.ends_with(".jsonl")) {
    read_jsonl(file);
  } else {
    throw ConfigError("--rows " + name_ + "=" + file +
                      ": FILE must be NAME.jsonl or VALUES.npy,OFFSETS.npy");
  }
}

void SideRows::read_npy_pair(const std::string& values_path, const std::string& offsets_path) {
  const NpyArray values = read_npy(values_path);
  const NpyArray offsets = read_npy(offsets_path);
  if (values.dtype.byte_order == '>') {
    throw FormatError(values_path,
                      "big-endian rows; save them little-endian "
                      "(array.astype(array.dtype.newbyteorder('<')))");
  }
  if (values.shape.empty()) throw FormatError(values_path, "a 0-d array holds no rows");
  if (offsets.shape.size() != 1 || offsets.shape[0] == 0 ||
      (offsets.dtype.kind != 'i' && offsets.dtype.kind != 'u') || offsets.dtype.byte_order == '>') {
    throw FormatError(offsets_path,
                      "offsets must be a 1-d little-endian integer array of N + 1 entries");
  }
  dtype_ = values.dtype;
  row_shape_.assign(values.shape.begin() + 1, values.shape.end());
  values_ = values.data;
  for (std::uint64_t i = 0; i < offsets.shape[0]; ++i) {
    const std::int64_t offset =
        little_endian_integer(offsets.data.data() + i * offsets.dtype.itemsize, offsets.dtype);
    const std::int64_t previous = i == 0 ? 0 : static_cast<std::int64_t>(offsets_.back());
    if ((i == 0 && offset != 0) || offset < previous ||
        static_cast<std::uint64_t>(offset) > values.rows()) {
      throw FormatError(offsets_path,
                        "offset " + std::to_string(i) + " is " + std::to_string(offset) +
                            ": offsets start at 0, never decrease and end at the " +
                            std::to_string(values.rows()) + " rows of " + values_path);
    }
    offsets_.push_back(static_cast<std::uint64_t>(offset));
  }
  if (offsets_.back() != values.rows()) {
    throw FormatError(offsets_path, "the last offset is " + std::to_string(offsets_.back()) +
                                        ", not the " + std::to_string(values.rows()) + " rows of " +
                                        values_path);
  }
}

#ifdef FFCV_HAVE_NLOHMANN_JSON
namespace {

// Whether float32 holds `value` exactly (every whole number up to 2^24 in size, and fewer beyond).
bool float_holds_exactly(std::int64_t value) {
  const float near = static_cast<float>(value);
  // 2^63 as a float is past int64: only values below it convert back.
  if (!(near >= -9.2233720368547758e18f && near < 9.2233720368547758e18f)) return false;
  return static_cast<std::int64_t>(near) == value;
}

// The first number written as a whole number (no '.', 'e' or 'E') in a line of JSON numbers that
// int64 cannot hold, or "": the JSON parser would read it as a double, silently inexact.
std::string whole_number_beyond_int64(const std::string& line) {
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t start = line.find_first_of("-0123456789", at);
    if (start == std::string::npos) return "";
    std::size_t end = line.find_first_not_of("-+0123456789.eE", start);
    if (end == std::string::npos) end = line.size();
    const std::string token = line.substr(start, end - start);
    at = end;
    if (token.find_first_of(".eE") != std::string::npos) continue;
    errno = 0;
    (void)std::strtoll(token.c_str(), nullptr, 10);
    if (errno == ERANGE) return token;
  }
  return "";
}

}  // namespace

void SideRows::read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path, "open", errno);
  std::vector<double> numbers;
  std::vector<std::int64_t> integers;  // the same values exactly, while every one is whole
  bool integral = true;
  // The first line holding a whole number float32 cannot hold exactly, should the field become
  // float32 (a fractional value anywhere).
  std::string inexact_in_float;
  // Values per row: nullopt until a row was seen; 0 for rows of one number.
  std::optional<std::uint64_t> width;
  offsets_.push_back(0);
  std::string line;
  for (std::uint64_t number = 1; std::getline(in, line); ++number) {
    const std::string where = "line " + std::to_string(number);
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      throw FormatError(path, where + " is empty; a sample without rows is []");
    }
    nlohmann::json rows;
    try {
      rows = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& error) {
      throw FormatError(path, where + " is not JSON: " + error.what());
    }
    if (!rows.is_array()) throw FormatError(path, where + " is not a JSON array of rows");
    if (const std::string beyond = whole_number_beyond_int64(line); !beyond.empty()) {
      throw FormatError(path, where + ": the whole number " + beyond + " is beyond int64's range");
    }
    for (const nlohmann::json& row : rows) {
      const bool scalar = row.is_number();
      if (!scalar && !row.is_array()) {
        throw FormatError(path, where + ": a row must be a number or an array of numbers");
      }
      if (!scalar && row.empty()) throw FormatError(path, where + ": a row holds no values");
      const std::uint64_t values = scalar ? 0 : row.size();
      if (width && *width != values) {
        throw FormatError(path, where + ": a row of " + std::to_string(values) +
                                    " values where the rows before held " + std::to_string(*width) +
                                    " (0: single numbers)");
      }
      width = values;
      const auto add = [&](const nlohmann::json& value) {
        if (!value.is_number()) throw FormatError(path, where + ": a value is not a number");
        const double v = value.get<double>();
        if (value.is_number_unsigned() &&
            value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
          throw FormatError(
              path, where + ": the whole number " + value.dump() + " is beyond int64's range");
        }
        if (!std::isfinite(v) || std::abs(v) > 3.4e38) {
          throw FormatError(path, where + ": a value is beyond float32's range");
        }
        if (value.is_number_integer()) {
          const std::int64_t whole = value.get<std::int64_t>();
          if (integral) integers.push_back(whole);
          if (inexact_in_float.empty() && !float_holds_exactly(whole)) {
            inexact_in_float = where + " holds " + value.dump();
          }
        } else {
          integral = false;
        }
        numbers.push_back(v);
      };
      if (scalar) {
        add(row);
      } else {
        for (const nlohmann::json& value : row) add(value);
      }
    }
    offsets_.push_back(offsets_.back() + rows.size());
  }
  if (width.value_or(0) > 0) row_shape_ = {*width};
  // Every row gave its values: the offsets and the values agree.
  if (numbers.size() != offsets_.back() * std::max<std::uint64_t>(1, width.value_or(0))) {
    throw FormatError(path, "the rows and their values disagree");
  }
  if (!integral && !inexact_in_float.empty()) {
    throw FormatError(path, "the values are stored as float32 (some are not whole numbers), but " +
                                inexact_in_float +
                                ", a whole number float32 cannot hold exactly; write whole "
                                "numbers only (stored as int64) or split the field");
  }
  dtype_ = DType::parse(integral ? "<i8" : "<f4");
  values_.resize(numbers.size() * dtype_.itemsize);
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (integral) {
      std::memcpy(&values_[i * 8], &integers[i], 8);
    } else {
      const auto v = static_cast<float>(numbers[i]);
      std::memcpy(&values_[i * 4], &v, 4);
    }
  }
}
#else
void SideRows::read_jsonl(const std::string& path) {
  throw ConfigError(path +
                    ": this build reads no JSON lines: it was built without "
                    "nlohmann-json3-dev; give VALUES.npy,OFFSETS.npy instead");
}
#endif

FieldPtr SideRows::field() const {
  return std::make_shared<RaggedNdArrayField>(dtype_, row_shape_);
}

NdArray SideRows::rows(std::uint64_t sample) const {
  std::uint64_t row_bytes = dtype_.itemsize;
  for (const std::uint64_t extent : row_shape_) row_bytes *= extent;
  const std::uint64_t first = offsets_[sample], count = offsets_[sample + 1] - first;
  NdArray array{dtype_, {count}, {}};
  array.shape.insert(array.shape.end(), row_shape_.begin(), row_shape_.end());
  const auto begin = values_.begin() + static_cast<std::ptrdiff_t>(first * row_bytes);
  array.bytes.assign(begin, begin + static_cast<std::ptrdiff_t>(count * row_bytes));
  return array;
}

WithSideRows::WithSideRows(const SampleSource& source, std::vector<SideRows> sides)
    : source_(source), sides_(std::move(sides)) {
  for (const SideRows& side : sides_) {
    if (side.samples() != source_.size()) {
      throw ConfigError("--rows " + side.name() + ": " + side.file() + " describes " +
                        std::to_string(side.samples()) + " samples, the source holds " +
                        std::to_string(source_.size()));
    }
  }
}

std::vector<FieldValue> WithSideRows::load(std::uint64_t index) const {
  std::vector<FieldValue> values = source_.load(index);
  for (const SideRows& side : sides_) values.emplace_back(side.rows(index));
  return values;
}

std::vector<NamedField> WithSideRows::fields(std::vector<NamedField> fields) const {
  for (const SideRows& side : sides_) fields.push_back({side.name(), side.field()});
  return fields;
}

}  // namespace ffcv::tools
