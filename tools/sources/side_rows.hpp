// Rows beside any source (`ffcv write KIND ... --rows NAME=FILE`): a RaggedNDArray field NAME
// whose sample i holds line i (or slice i) of FILE, e.g. each image's caption as token ids.
//
// FILE is one of:
//   NAME.jsonl               line i: sample i's rows, a JSON array of numbers (rows of one value,
//                            as token ids) or of equal-length arrays of numbers (rows of that
//                            many values, as points); stored as int64, exactly, when every
//                            value is a whole number (one beyond int64 is refused), else as
//                            float32 (then a whole number float32 cannot hold exactly, such as
//                            2^53 + 1, is refused naming its line); [] is no rows
//   VALUES.npy,OFFSETS.npy   every sample's rows back to back (shape [rows, ...], any integer,
//                            float or bool dtype, little-endian) and N + 1 offsets (integers,
//                            0 first, never decreasing, the number of rows last): sample i is
//                            VALUES[OFFSETS[i]:OFFSETS[i + 1]], torch's jagged layout
// The file must describe exactly as many samples as the source holds, in the source's order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ffcv/dataset_writer.hpp"

namespace ffcv::tools {

class SideRows {
 public:
  // Reads FILE for field `name`. Throws FormatError naming the file and the line or offset at
  // fault, ConfigError for a FILE of neither kind.
  SideRows(std::string name, const std::string& file);

  const std::string& name() const { return name_; }
  const std::string& file() const { return file_; }
  std::uint64_t samples() const { return offsets_.size() - 1; }
  FieldPtr field() const;
  NdArray rows(std::uint64_t sample) const;

 private:
  void read_jsonl(const std::string& path);
  void read_npy_pair(const std::string& values, const std::string& offsets);

  std::string name_, file_;
  DType dtype_;
  std::vector<std::uint64_t> row_shape_;
  std::vector<std::uint8_t> values_;    // all rows, back to back
  std::vector<std::uint64_t> offsets_;  // samples() + 1 row offsets
};

// "NAME=FILE" of --rows; throws UsageError for another shape or an empty part.
std::pair<std::string, std::string> parse_rows_option(const std::string& text);
// The files FILE names: the values and offsets of a "VALUES.npy,OFFSETS.npy" pair, else FILE.
std::vector<std::string> rows_files(const std::string& file);

// `source` with each of `sides`' rows appended to every sample, as fields after `fields`.
// Throws ConfigError when a side's sample count is not the source's, naming both.
class WithSideRows final : public SampleSource {
 public:
  WithSideRows(const SampleSource& source, std::vector<SideRows> sides);
  std::uint64_t size() const override { return source_.size(); }
  std::vector<FieldValue> load(std::uint64_t index) const override;
  std::string describe(std::uint64_t index) const override { return source_.describe(index); }
  void prefetch(std::uint64_t index) const override { source_.prefetch(index); }
  // `fields` (the source's) with the side fields after them.
  std::vector<NamedField> fields(std::vector<NamedField> fields) const;

 private:
  const SampleSource& source_;
  std::vector<SideRows> sides_;
};

}  // namespace ffcv::tools
