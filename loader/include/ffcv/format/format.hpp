// The on-disk layout of a .beton file, FFCV format version 2.
//
//   offset 0                   Header (24 bytes)
//   offset 24                  FieldDescriptor[num_fields], 1041 bytes each
//   offset M = 24 + 1041*F     metadata table: num_samples records of record_size bytes
//   offset D = align_up(M + N*S, page_size)
//                              data region: whole pages; no allocation crosses a page boundary
//   offset alloc_table_ptr     AllocEntry[...] (24 bytes each) up to the end of the file
//
// All integers are little-endian. Every pointer is an absolute file offset. The record layout
// follows numpy's `align=True` struct rules (see MetadataLayout). docs/format.md has the details.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ffcv {

inline constexpr std::uint16_t kFormatVersion = 2;
inline constexpr std::size_t kHeaderSize = 24;
inline constexpr std::size_t kFieldNameSize = 16;
inline constexpr std::size_t kFieldArgsSize = 1024;
inline constexpr std::size_t kFieldDescriptorSize = 1 + kFieldNameSize + kFieldArgsSize;  // 1041
inline constexpr std::size_t kAllocEntrySize = 24;
// Page size bounds of FFCV's writer: a power of two in [2 MiB, 4 GiB).
inline constexpr std::uint64_t kMinPageSize = std::uint64_t{1} << 21;
inline constexpr std::uint64_t kMaxPageSize =
    (std::uint64_t{1} << 32) >> 1;                                         // largest power < 2^32
inline constexpr std::uint64_t kDefaultPageSize = std::uint64_t{1} << 23;  // 8 MiB

struct Header {
  std::uint16_t version = kFormatVersion;
  std::uint16_t num_fields = 0;
  std::uint32_t page_size = 0;
  std::uint64_t num_samples = 0;
  std::uint64_t alloc_table_ptr = 0;

  std::array<std::uint8_t, kHeaderSize> encode() const;
  static Header decode(const std::uint8_t* bytes);
};

using FieldArgs = std::array<std::uint8_t, kFieldArgsSize>;

struct FieldDescriptor {
  std::uint8_t type_id = 0;
  std::string name;  // at most 16 ASCII bytes; stored NUL-padded, without terminator when full
  FieldArgs args{};

  std::array<std::uint8_t, kFieldDescriptorSize> encode() const;
  static FieldDescriptor decode(const std::uint8_t* bytes);
};

// One heap allocation: `size` bytes at absolute offset `ptr`, belonging to sample `sample_id`.
struct AllocEntry {
  std::uint64_t sample_id = 0;
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;

  void encode_to(std::uint8_t* bytes) const;
  static AllocEntry decode(const std::uint8_t* bytes);
};

// Size and alignment of one field's metadata column (numpy dtype itemsize and alignment).
struct ColumnType {
  std::size_t size = 0;
  std::size_t alignment = 1;
};

// Column offsets and record size of the metadata table: numpy `align=True` struct semantics.
struct MetadataLayout {
  std::vector<std::size_t> column_offsets;
  std::size_t record_size = 0;

  static MetadataLayout compute(const std::vector<ColumnType>& columns);
};

inline constexpr std::uint64_t metadata_start(std::size_t num_fields) {
  return kHeaderSize + kFieldDescriptorSize * num_fields;
}

inline constexpr std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

inline constexpr bool is_power_of_two(std::uint64_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

// Throws ConfigError unless `page_size` is a power of two within [kMinPageSize, kMaxPageSize].
void check_page_size(std::uint64_t page_size);

}  // namespace ffcv
