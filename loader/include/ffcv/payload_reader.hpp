// PayloadReader: read access to the heap payloads of an open .beton file.
//
// A sample's metadata column holds pointers into the file's data region (an image's JPEG bytes,
// an array's values); the payload of a pointer is the allocation that starts exactly there. Two
// kinds of code read payloads through this one interface: a Field decoding a whole value
// (Field::decode, e.g. for `ffcv inspect` and tests, where the Reader itself answers from its
// mapping) and a pipeline's Decoder (Decoder::decode, where the loader answers through its page
// source, so only the pages of the epoch's schedule are read).
#pragma once

#include <cstdint>
#include <span>

namespace ffcv {

class PayloadReader {
 public:
  virtual ~PayloadReader() = default;
  // The payload of the allocation starting exactly at `ptr`, its size looked up in the
  // allocation table. Throws FormatError when no allocation starts there.
  virtual std::span<const std::uint8_t> payload(std::uint64_t ptr) const = 0;
  // The same when the size is known from the metadata (the reader checked every stated size
  // against the allocation table when it opened the file): no table lookup.
  virtual std::span<const std::uint8_t> payload(std::uint64_t ptr, std::uint64_t size) const = 0;
};

}  // namespace ffcv
