// Reader: opens a .beton file, validates all of its tables, and gives access to samples.
//
// Opening checks everything before anything is used: the header (size, version, page size), the
// field descriptors (known type ids, unique names), that the metadata table and allocation table
// lie inside the file, every allocation (owner sample in range, inside the data region, not
// crossing a page, not overlapping another), and every sample's metadata (its own consistency
// and every heap pointer: present in the allocation table, owned by that sample, of the size the
// field requires). Each problem is one FormatError naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ffcv/field.hpp"
#include "ffcv/field_registry.hpp"
#include "ffcv/payload_reader.hpp"
#include "ffcv/storage/file_view.hpp"

namespace ffcv {

struct ReaderOptions {
  // Factories for fields by name, tried before the registry (FFCV's `custom_fields`).
  std::map<std::string, FieldFactory> custom_fields;
  // Timeouts and retries when the file is a URL.
  HttpOptions http;
};

class Reader final : public PayloadReader {
 public:
  // `path`: a local file, or an http:// or https:// URL, of which only the header and tables are
  // fetched (see FileView). Throws FormatError (bad content) or IoError (cannot open or fetch).
  explicit Reader(const std::string& path, ReaderOptions options = {});

  const std::string& path() const { return file_.location(); }
  // True when the file is a URL: payload() then fetches what it returns.
  bool remote() const { return file_.remote(); }
  std::uint64_t file_size() const { return file_.size(); }
  // Throws FormatError when the file changed on disk since it was opened and validated (see
  // MappedFile::check_intact).
  void check_intact() const { file_.check_intact(); }
  const Header& header() const { return header_; }
  std::uint64_t num_samples() const { return header_.num_samples; }
  std::uint64_t page_size() const { return header_.page_size; }

  const std::vector<NamedField>& fields() const { return fields_; }
  const std::vector<FieldDescriptor>& descriptors() const { return descriptors_; }
  // Index of the field called `name`; throws ConfigError listing the fields when absent.
  std::size_t field_index(std::string_view name) const;

  const MetadataLayout& layout() const { return layout_; }
  std::uint64_t metadata_offset() const { return metadata_start(fields_.size()); }
  // First byte after the metadata table; the data region starts at the next page boundary.
  std::uint64_t metadata_end() const;
  // Metadata column of `field` for `sample` (layout().column_offsets[field] into the record).
  const std::uint8_t* column(std::uint64_t sample, std::size_t field) const;

  // All allocations, sorted by pointer.
  std::span<const AllocEntry> allocations() const { return allocations_; }
  // Payloads straight from the file (see PayloadReader); for a URL, fetched on first use.
  std::span<const std::uint8_t> payload(std::uint64_t ptr) const override;
  std::span<const std::uint8_t> payload(std::uint64_t ptr, std::uint64_t size) const override;
  // The allocation starting exactly at `ptr`, or null.
  const AllocEntry* find_allocation(std::uint64_t ptr) const;
  // The page of sample i's heap data (all of a sample's allocations share a page), or kNoPage
  // when it has none; sized num_samples().
  std::vector<std::uint64_t> page_of_samples() const;

  // The whole value of one field of one sample.
  FieldValue decode(std::uint64_t sample, std::size_t field) const;

 private:
  void parse_header();
  void parse_fields(const ReaderOptions& options);
  void parse_allocations();
  void validate_samples() const;
  [[noreturn]] void fail(const std::string& problem, std::uint64_t offset) const;

  FileView file_;
  const std::uint8_t* metadata_ = nullptr;  // the metadata table, once parse_allocations ran
  Header header_;
  std::vector<FieldDescriptor> descriptors_;
  std::vector<NamedField> fields_;
  MetadataLayout layout_;
  std::vector<AllocEntry> allocations_;
};

}  // namespace ffcv
