// Field: one column of a dataset, both ways.
//
// A field knows its FFCV type id, its argument blob (the 1024 bytes of its descriptor), the
// numpy type of its per-sample metadata column, how to encode a value into that column plus
// heap allocations (writer side), which heap pointers a column holds and what size each must
// have (validation), and how to decode a whole value back (inspection, tests, default decoding).
// Built-in fields live in ffcv/fields/; new ones plug in through FieldRegistry.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ffcv/encode_tally.hpp"
#include "ffcv/format/format.hpp"
#include "ffcv/format/value.hpp"
#include "ffcv/payload_reader.hpp"
#include "ffcv/util/byte_buffer_pool.hpp"

namespace ffcv {

// A heap payload produced by an encoder. Its absolute file offset is only known once the writer
// places it in a page; the writer then stores that offset as a little-endian u64 at
// `pointer_offset` bytes into the field's metadata column.
struct EncodedAllocation {
  std::vector<std::uint8_t> bytes;
  std::size_t pointer_offset = 0;
};

// Per-sample facts an encoder may use. Random write decisions (the 'proportion' image mode)
// must depend on these only, so the output does not depend on thread scheduling.
struct EncodeContext {
  std::uint64_t sample_index = 0;
  std::uint64_t seed = 0;
  // Where an encoder adds the time its stages take and what it did (encode_tally.hpp); null
  // when nobody counts.
  EncodeTally* tally = nullptr;
  // Where an encoder takes its large buffers from and hands its scratch back (the writer's pool,
  // to which the writer returns each payload once it is placed); null: plain allocation.
  ByteBufferPool* buffers = nullptr;
};

// A heap pointer held in a metadata column, and the payload size the field requires there
// (nullopt when any size is valid, e.g. a JPEG).
struct HeapRef {
  std::uint64_t ptr = 0;
  std::optional<std::uint64_t> expected_size;
};

class Field {
 public:
  virtual ~Field() = default;

  virtual std::uint8_t type_id() const = 0;
  // The name used in listings and recipes: "RGBImage", "Int", "Float", "NDArray", ...
  virtual std::string type_name() const = 0;
  virtual ColumnType column_type() const = 0;
  // The descriptor's argument blob (all zeros for most built-in fields).
  virtual FieldArgs args() const { return FieldArgs{}; }

  // Encodes `value` into `column` (column_type().size bytes, zero-filled on entry) and appends
  // the sample's heap payloads to `heap`. Throws EncodeError for a value it cannot store.
  virtual void encode(const FieldValue& value, std::uint8_t* column,
                      std::vector<EncodedAllocation>& heap, const EncodeContext& context) const = 0;

  // Checks the column's own consistency: the empty string when it is valid, otherwise what is
  // wrong (e.g. "image mode 7 is neither jpg (0) nor raw (1)"). The reader adds file and offset.
  virtual std::string check_column(const std::uint8_t* /*column*/) const { return {}; }

  // The heap pointers `column` holds. The reader checks each against the allocation table.
  virtual std::vector<HeapRef> heap_refs(const std::uint8_t* /*column*/) const { return {}; }

  // Decodes the whole value of one sample, reading its heap payloads through `heap`.
  virtual FieldValue decode(const std::uint8_t* column, const PayloadReader& heap) const = 0;

  // The metadata of one sample as a JSON object, e.g. {"mode": "jpg", "width": 500, ...}.
  virtual std::string describe(const std::uint8_t* column) const = 0;
};

using FieldPtr = std::shared_ptr<const Field>;

// A named field, in the order of the dataset's columns.
struct NamedField {
  std::string name;
  FieldPtr field;
};

}  // namespace ffcv
