#include "ffcv/format/format.hpp"

#include <algorithm>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"

namespace ffcv {

std::array<std::uint8_t, kHeaderSize> Header::encode() const {
  std::array<std::uint8_t, kHeaderSize> bytes{};
  store_le(bytes.data() + 0, version);
  store_le(bytes.data() + 2, num_fields);
  store_le(bytes.data() + 4, page_size);
  store_le(bytes.data() + 8, num_samples);
  store_le(bytes.data() + 16, alloc_table_ptr);
  return bytes;
}

Header Header::decode(const std::uint8_t* bytes) {
  Header header;
  header.version = load_le<std::uint16_t>(bytes + 0);
  header.num_fields = load_le<std::uint16_t>(bytes + 2);
  header.page_size = load_le<std::uint32_t>(bytes + 4);
  header.num_samples = load_le<std::uint64_t>(bytes + 8);
  header.alloc_table_ptr = load_le<std::uint64_t>(bytes + 16);
  return header;
}

std::array<std::uint8_t, kFieldDescriptorSize> FieldDescriptor::encode() const {
  std::array<std::uint8_t, kFieldDescriptorSize> bytes{};
  bytes[0] = type_id;
  std::copy_n(name.begin(), std::min(name.size(), kFieldNameSize), bytes.begin() + 1);
  std::copy(args.begin(), args.end(), bytes.begin() + 1 + kFieldNameSize);
  return bytes;
}

FieldDescriptor FieldDescriptor::decode(const std::uint8_t* bytes) {
  FieldDescriptor descriptor;
  descriptor.type_id = bytes[0];
  const auto* name = bytes + 1;
  const auto* name_end = std::find(name, name + kFieldNameSize, std::uint8_t{0});
  descriptor.name.assign(name, name_end);
  std::copy_n(bytes + 1 + kFieldNameSize, kFieldArgsSize, descriptor.args.begin());
  return descriptor;
}

void AllocEntry::encode_to(std::uint8_t* bytes) const {
  store_le(bytes + 0, sample_id);
  store_le(bytes + 8, ptr);
  store_le(bytes + 16, size);
}

AllocEntry AllocEntry::decode(const std::uint8_t* bytes) {
  return {load_le<std::uint64_t>(bytes + 0), load_le<std::uint64_t>(bytes + 8),
          load_le<std::uint64_t>(bytes + 16)};
}

MetadataLayout MetadataLayout::compute(const std::vector<ColumnType>& columns) {
  MetadataLayout layout;
  std::size_t offset = 0;
  std::size_t max_alignment = 1;
  for (const ColumnType& column : columns) {
    offset = align_up(offset, column.alignment);
    layout.column_offsets.push_back(offset);
    offset += column.size;
    max_alignment = std::max(max_alignment, column.alignment);
  }
  layout.record_size = align_up(offset, max_alignment);
  return layout;
}

void check_page_size(std::uint64_t page_size) {
  if (!is_power_of_two(page_size) || page_size < kMinPageSize || page_size > kMaxPageSize) {
    throw ConfigError("page size " + std::to_string(page_size) +
                      " must be a power of two between 2 MiB (2097152) and 2 GiB (2147483648)");
  }
}

}  // namespace ffcv
