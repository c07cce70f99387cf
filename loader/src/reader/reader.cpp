#include "ffcv/reader.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

// a * b + c, or nullopt on 64-bit overflow: sizes in a corrupt header can be anything.
std::optional<std::uint64_t> checked_mul_add(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, &sum)) {
    return std::nullopt;
  }
  return sum;
}

struct IndexedEntry {
  AllocEntry entry;
  std::uint64_t table_index;
};

}  // namespace

Reader::Reader(const std::string& path, ReaderOptions options) : file_(path, options.http) {
  parse_header();
  parse_fields(options);
  parse_allocations();
  validate_samples();
}

void Reader::fail(const std::string& problem, std::uint64_t offset) const {
  throw FormatError(path(), problem, offset);
}

void Reader::parse_header() {
  if (file_size() < kHeaderSize) {
    fail("file of " + std::to_string(file_size()) + " bytes is too short for a .beton header (" +
             std::to_string(kHeaderSize) + " bytes); truncated or not a .beton file",
         0);
  }
  header_ = Header::decode(file_.bytes(0, kHeaderSize).data());
  if (header_.version != kFormatVersion) {
    fail("format version " + std::to_string(header_.version) + " is not supported (expected " +
             std::to_string(kFormatVersion) + "); not a .beton file, or from another FFCV version",
         0);
  }
  if (header_.num_fields == 0) fail("header declares no fields", 2);
  if (!is_power_of_two(header_.page_size)) {
    fail("page size " + std::to_string(header_.page_size) + " is not a power of two", 4);
  }
}

void Reader::parse_fields(const ReaderOptions& options) {
  const std::uint64_t descriptors_end = metadata_start(header_.num_fields);
  if (file_size() < descriptors_end) {
    fail("file ends inside the field descriptors (" + std::to_string(header_.num_fields) +
             " fields need " + std::to_string(descriptors_end) + " bytes, file has " +
             std::to_string(file_size()) + "); truncated",
         file_size());
  }
  const std::uint8_t* descriptors =
      file_.bytes(kHeaderSize, descriptors_end - kHeaderSize).data() - kHeaderSize;
  std::set<std::string> names;
  std::vector<ColumnType> columns;
  for (std::size_t i = 0; i < header_.num_fields; ++i) {
    const std::uint64_t offset = kHeaderSize + i * kFieldDescriptorSize;
    FieldDescriptor descriptor = FieldDescriptor::decode(descriptors + offset);
    if (descriptor.name.empty())
      fail("field " + std::to_string(i) + " has an empty name", offset + 1);
    for (const char c : descriptor.name) {
      if (static_cast<unsigned char>(c) >= 0x80 || static_cast<unsigned char>(c) < 0x20) {
        fail("field " + std::to_string(i) + " name is not printable ASCII", offset + 1);
      }
    }
    if (!names.insert(descriptor.name).second) {
      fail("two fields are named '" + descriptor.name + "'", offset + 1);
    }
    FieldPtr field;
    try {
      field = FieldRegistry::global().make(descriptor, options.custom_fields);
    } catch (const std::exception& error) {
      fail(error.what(), offset);
    }
    columns.push_back(field->column_type());
    fields_.push_back({descriptor.name, std::move(field)});
    descriptors_.push_back(std::move(descriptor));
  }
  layout_ = MetadataLayout::compute(columns);
}

std::uint64_t Reader::metadata_end() const {
  return metadata_offset() + header_.num_samples * layout_.record_size;
}

void Reader::parse_allocations() {
  const auto end = checked_mul_add(header_.num_samples, layout_.record_size, metadata_offset());
  if (!end || *end > file_size()) {
    fail("metadata table of " + std::to_string(header_.num_samples) + " samples x " +
             std::to_string(layout_.record_size) + " bytes does not fit in the file of " +
             std::to_string(file_size()) + " bytes; truncated or corrupt sample count",
         8);
  }
  const std::uint64_t table = header_.alloc_table_ptr;
  if (table < *end || table > file_size()) {
    fail("allocation table pointer " + std::to_string(table) + " lies outside [" +
             std::to_string(*end) + ", " + std::to_string(file_size()) +
             "] (end of metadata, end of file); truncated or corrupt",
         16);
  }
  if ((file_size() - table) % kAllocEntrySize != 0) {
    fail("allocation table of " + std::to_string(file_size() - table) +
             " bytes is not a whole number of 24-byte entries; truncated or trailing bytes",
         table);
  }
  metadata_ = file_.bytes(metadata_offset(), *end - metadata_offset()).data();
  const std::uint64_t count = (file_size() - table) / kAllocEntrySize;
  const std::uint8_t* table_bytes = file_.bytes(table, file_size() - table).data() - table;
  std::vector<IndexedEntry> entries;
  entries.reserve(count);
  const std::uint64_t page_mask = ~(std::uint64_t{header_.page_size} - 1);
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t offset = table + k * kAllocEntrySize;
    const AllocEntry entry = AllocEntry::decode(table_bytes + offset);
    if (entry.sample_id >= header_.num_samples) {
      fail("allocation " + std::to_string(k) + " belongs to sample " +
               std::to_string(entry.sample_id) + " but the file has " +
               std::to_string(header_.num_samples) + " samples",
           offset);
    }
    std::uint64_t entry_end = 0;
    if (entry.ptr < *end || __builtin_add_overflow(entry.ptr, entry.size, &entry_end) ||
        entry_end > table) {
      fail("allocation " + std::to_string(k) + " [" + std::to_string(entry.ptr) + ", +" +
               std::to_string(entry.size) + ") lies outside the data region [" +
               std::to_string(*end) + ", " + std::to_string(table) + ")",
           offset);
    }
    if (entry.size > 0 && (entry.ptr & page_mask) != ((entry_end - 1) & page_mask)) {
      fail("allocation " + std::to_string(k) + " at " + std::to_string(entry.ptr) + " of " +
               std::to_string(entry.size) + " bytes crosses a page boundary (page size " +
               std::to_string(header_.page_size) + ")",
           offset);
    }
    entries.push_back({entry, k});
  }
  std::sort(entries.begin(), entries.end(),
            [](const IndexedEntry& a, const IndexedEntry& b) { return a.entry.ptr < b.entry.ptr; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const AllocEntry& previous = entries[i - 1].entry;
    const AllocEntry& current = entries[i].entry;
    if (current.ptr < previous.ptr + std::max<std::uint64_t>(previous.size, 1)) {
      if (previous.size == 0 || current.size == 0) {
        const IndexedEntry& empty = previous.size == 0 ? entries[i - 1] : entries[i];
        fail("allocation " + std::to_string(empty.table_index) + " of sample " +
                 std::to_string(empty.entry.sample_id) +
                 " is empty (zero bytes, as FFCV writes an empty Bytes value) and shares "
                 "pointer " +
                 std::to_string(empty.entry.ptr) +
                 " with another allocation, so neither can be located",
             table + empty.table_index * kAllocEntrySize);
      }
      fail("allocations " + std::to_string(entries[i - 1].table_index) + " and " +
               std::to_string(entries[i].table_index) + " overlap at " +
               std::to_string(current.ptr),
           table + entries[i].table_index * kAllocEntrySize);
    }
  }
  allocations_.reserve(entries.size());
  for (const IndexedEntry& e : entries) allocations_.push_back(e.entry);
}

const AllocEntry* Reader::find_allocation(std::uint64_t ptr) const {
  auto it = std::lower_bound(allocations_.begin(), allocations_.end(), ptr,
                             [](const AllocEntry& e, std::uint64_t p) { return e.ptr < p; });
  return it != allocations_.end() && it->ptr == ptr ? &*it : nullptr;
}

void Reader::validate_samples() const {
  for (std::uint64_t sample = 0; sample < header_.num_samples; ++sample) {
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      const std::uint8_t* col = column(sample, f);
      const std::uint64_t offset = metadata_offset() + static_cast<std::uint64_t>(col - metadata_);
      const std::string where =
          "sample " + std::to_string(sample) + " field '" + fields_[f].name + "'";
      if (std::string problem = fields_[f].field->check_column(col); !problem.empty()) {
        fail(where + ": " + problem, offset);
      }
      for (const HeapRef& ref : fields_[f].field->heap_refs(col)) {
        const AllocEntry* entry = find_allocation(ref.ptr);
        if (entry == nullptr) {
          fail(where + ": data pointer " + std::to_string(ref.ptr) +
                   " has no entry in the allocation table",
               offset);
        }
        if (entry->sample_id != sample) {
          fail(where + ": data at " + std::to_string(ref.ptr) + " is owned by sample " +
                   std::to_string(entry->sample_id),
               offset);
        }
        if (ref.expected_size && *ref.expected_size != entry->size) {
          fail(where + ": data at " + std::to_string(ref.ptr) + " holds " +
                   std::to_string(entry->size) + " bytes, the field requires " +
                   std::to_string(*ref.expected_size),
               offset);
        }
      }
    }
  }
}

std::size_t Reader::field_index(std::string_view name) const {
  std::string known;
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return i;
    known += (i ? ", " : "") + fields_[i].name;
  }
  throw ConfigError(path() + ": no field named '" + std::string(name) + "' (fields: " + known +
                    ")");
}

const std::uint8_t* Reader::column(std::uint64_t sample, std::size_t field) const {
  return metadata_ + sample * layout_.record_size + layout_.column_offsets[field];
}

std::span<const std::uint8_t> Reader::payload(std::uint64_t ptr) const {
  const AllocEntry* entry = find_allocation(ptr);
  if (entry == nullptr) {
    throw FormatError(path(), "no allocation starts at " + std::to_string(ptr), ptr);
  }
  return file_.bytes(entry->ptr, entry->size);
}

std::span<const std::uint8_t> Reader::payload(std::uint64_t ptr, std::uint64_t size) const {
  if (ptr > file_size() || size > file_size() - ptr) {
    throw FormatError(
        path(), "a payload of " + std::to_string(size) + " bytes runs past the end of the file",
        ptr);
  }
  return file_.bytes(ptr, size);
}

std::vector<std::uint64_t> Reader::page_of_samples() const {
  std::vector<std::uint64_t> pages(num_samples(), ~std::uint64_t{0});
  for (const AllocEntry& entry : allocations_) pages[entry.sample_id] = entry.ptr / page_size();
  return pages;
}

FieldValue Reader::decode(std::uint64_t sample, std::size_t field) const {
  if (sample >= num_samples()) {
    throw ConfigError(path() + ": sample " + std::to_string(sample) + " is out of range (" +
                      std::to_string(num_samples()) + " samples)");
  }
  try {
    return fields_.at(field).field->decode(column(sample, field), *this);
  } catch (const EncodeError& error) {
    throw FormatError(path(), "sample " + std::to_string(sample) + " field '" +
                                  fields_[field].name + "': " + error.what());
  }
}

}  // namespace ffcv
