#include "sources/mat_file.hpp"

#include <zlib.h>

#include <cstring>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"

namespace ffcv::tools {
namespace {

// Data element types (miTYPE) and array classes (mxCLASS) of the level-5 format.
enum : std::uint32_t {
  kInt8 = 1,
  kUint8 = 2,
  kInt16 = 3,
  kUint16 = 4,
  kInt32 = 5,
  kUint32 = 6,
  kSingle = 7,
  kDouble = 9,
  kInt64 = 12,
  kUint64 = 13,
  kMatrix = 14,
  kCompressed = 15,
  kUtf8 = 16,
  kUtf16 = 17,
  kUtf32 = 18
};
enum : std::uint32_t { kCellClass = 1, kStructClass = 2, kCharClass = 4, kSparseClass = 5 };
constexpr std::uint32_t kComplexFlag = 0x800;
constexpr std::size_t kHeaderBytes = 128;
constexpr int kMaxDepth = 32;  // nested cells and structs

struct Element {
  std::uint32_t type = 0;
  std::span<const std::uint8_t> data;
};

class MatReader {
 public:
  explicit MatReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw FormatError(path_, "not a MAT file this reader takes: " + problem);
  }

  // The element at `at` of `bytes`, and the offset after it (8-byte aligned).
  Element next(std::span<const std::uint8_t> bytes, std::size_t& at) const {
    if (bytes.size() - at < 8) fail("a data element is cut short");
    const auto first = load_le<std::uint32_t>(bytes.data() + at);
    Element element;
    if ((first >> 16) != 0) {  // small data element: type and size in one word, data in the next
      element.type = first & 0xFFFF;
      const std::uint32_t size = first >> 16;
      if (size > 4) fail("a small data element of more than 4 bytes");
      element.data = bytes.subspan(at + 4, size);
      at += 8;
      return element;
    }
    element.type = first;
    const auto size = load_le<std::uint32_t>(bytes.data() + at + 4);
    if (size > bytes.size() - at - 8) fail("a data element runs past its container");
    element.data = bytes.subspan(at + 8, size);
    at += 8 + size;
    if (element.type != kCompressed) at = std::min(bytes.size(), (at + 7) / 8 * 8);
    return element;
  }

  // Inflates a miCOMPRESSED element; the result holds one whole element.
  std::vector<std::uint8_t> inflate(std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> out(std::max<std::size_t>(data.size() * 4, 1024));
    z_stream stream{};
    if (inflateInit(&stream) != Z_OK) fail("zlib could not start");
    stream.next_in = const_cast<Bytef*>(data.data());
    stream.avail_in = static_cast<uInt>(data.size());
    int status = Z_OK;
    while (status == Z_OK) {
      if (stream.total_out == out.size()) {
        if (out.size() > (std::size_t{1} << 30)) break;
        out.resize(out.size() * 2);
      }
      stream.next_out = out.data() + stream.total_out;
      stream.avail_out = static_cast<uInt>(out.size() - stream.total_out);
      status = ::inflate(&stream, Z_NO_FLUSH);
    }
    const std::size_t produced = stream.total_out;
    inflateEnd(&stream);
    if (status != Z_STREAM_END) fail("a compressed element does not inflate");
    out.resize(produced);
    return out;
  }

  MatArray matrix(std::span<const std::uint8_t> data, std::string* name, int depth) {
    if (depth > kMaxDepth) fail("arrays nested more than " + std::to_string(kMaxDepth) + " deep");
    std::size_t at = 0;
    const Element flags = next(data, at);
    if (flags.type != kUint32 || flags.data.size() < 8) fail("an array without its flags");
    const auto word = load_le<std::uint32_t>(flags.data.data());
    const std::uint32_t array_class = word & 0xFF;
    if ((word & kComplexFlag) != 0 || array_class == kSparseClass) {
      fail("complex or sparse arrays");
    }
    const Element dims = next(data, at);
    if (dims.type != kInt32 || dims.data.size() % 4 != 0) fail("an array without dimensions");
    MatArray array;
    for (std::size_t i = 0; i < dims.data.size(); i += 4) {
      const auto d = load_le<std::int32_t>(dims.data.data() + i);
      if (d < 0) fail("a negative dimension");
      array.dims.push_back(static_cast<std::uint64_t>(d));
    }
    const Element array_name = next(data, at);
    if (name != nullptr) name->assign(array_name.data.begin(), array_name.data.end());
    const std::uint64_t count = array.element_count();
    if (array_class == kStructClass || array_class == kCellClass) {
      if (count > data.size()) fail("more elements than bytes");
      if (array_class == kStructClass) {
        array.kind = MatArray::Kind::kStruct;
        const Element length = next(data, at);
        const Element names = next(data, at);
        if (length.data.size() < 4) fail("a struct without its field name length");
        const auto width = load_le<std::int32_t>(length.data.data());
        if (width <= 0 || names.data.size() % static_cast<std::size_t>(width) != 0) {
          fail("struct field names that do not fit their length");
        }
        for (std::size_t i = 0; i < names.data.size(); i += static_cast<std::size_t>(width)) {
          const auto* begin = reinterpret_cast<const char*>(names.data.data() + i);
          array.field_names.emplace_back(begin, strnlen(begin, static_cast<std::size_t>(width)));
        }
      } else {
        array.kind = MatArray::Kind::kCell;
      }
      const std::uint64_t per_element =
          array.kind == MatArray::Kind::kStruct ? array.field_names.size() : 1;
      for (std::uint64_t i = 0; i < count * per_element; ++i) {
        const Element child = next(data, at);
        if (child.type != kMatrix) fail("a cell or field that is not an array");
        array.cells.push_back(child.data.empty() ? MatArray{}
                                                 : matrix(child.data, nullptr, depth + 1));
      }
      return array;
    }
    const Element real = at < data.size() ? next(data, at) : Element{kDouble, {}};
    if (array_class == kCharClass) {
      array.kind = MatArray::Kind::kChar;
      array.text = text_of(real);
    } else if (array_class >= 6 && array_class <= 15) {
      array.numbers = numbers_of(real);
    } else {
      fail("array class " + std::to_string(array_class));
    }
    return array;
  }

  std::vector<double> numbers_of(const Element& e) const {
    std::size_t width = 0;
    switch (e.type) {
      case kInt8:
      case kUint8:
        width = 1;
        break;
      case kInt16:
      case kUint16:
        width = 2;
        break;
      case kInt32:
      case kUint32:
      case kSingle:
        width = 4;
        break;
      case kDouble:
      case kInt64:
      case kUint64:
        width = 8;
        break;
      default:
        fail("numeric data of type " + std::to_string(e.type));
    }
    std::vector<double> out;
    for (std::size_t i = 0; i + width <= e.data.size(); i += width) {
      const std::uint8_t* p = e.data.data() + i;
      switch (e.type) {
        case kInt8:
          out.push_back(static_cast<std::int8_t>(*p));
          break;
        case kUint8:
          out.push_back(*p);
          break;
        case kInt16:
          out.push_back(load_le<std::int16_t>(p));
          break;
        case kUint16:
          out.push_back(load_le<std::uint16_t>(p));
          break;
        case kInt32:
          out.push_back(load_le<std::int32_t>(p));
          break;
        case kUint32:
          out.push_back(load_le<std::uint32_t>(p));
          break;
        case kSingle:
          out.push_back(load_le<float>(p));
          break;
        case kDouble:
          out.push_back(load_le<double>(p));
          break;
        case kInt64:
          out.push_back(static_cast<double>(load_le<std::int64_t>(p)));
          break;
        default:
          out.push_back(static_cast<double>(load_le<std::uint64_t>(p)));
          break;
      }
    }
    return out;
  }

  std::string text_of(const Element& e) const {
    if (e.type == kUtf8 || e.type == kInt8 || e.type == kUint8) {
      return std::string(e.data.begin(), e.data.end());
    }
    if (e.type != kUint16 && e.type != kUtf16 && e.type != kInt16) {
      fail("characters of type " + std::to_string(e.type));
    }
    std::string out;
    for (std::size_t i = 0; i + 2 <= e.data.size(); i += 2) {
      const auto c = load_le<std::uint16_t>(e.data.data() + i);
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
      } else {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
      }
    }
    return out;
  }

 private:
  std::string path_;
};

}  // namespace

std::uint64_t MatArray::element_count() const {
  if (dims.empty()) return 0;
  std::uint64_t count = 1;
  for (const std::uint64_t d : dims) count *= d;
  return count;
}

const MatArray& MatArray::field(std::uint64_t e, const std::string& name) const {
  for (std::size_t f = 0; f < field_names.size(); ++f) {
    if (field_names[f] == name && e * field_names.size() + f < cells.size()) {
      return cells[e * field_names.size() + f];
    }
  }
  throw FormatError("MAT struct", "no field '" + name + "' in element " + std::to_string(e));
}

std::map<std::string, MatArray> read_mat_file(std::span<const std::uint8_t> bytes,
                                              const std::string& path) {
  MatReader reader(path);
  if (bytes.size() < kHeaderBytes) reader.fail("shorter than the 128-byte header");
  if (bytes[126] != 'I' || bytes[127] != 'M') {
    reader.fail(bytes.size() > 3 && std::memcmp(bytes.data() + 1, "HDF", 3) == 0
                    ? "a v7.3 (HDF5) file"
                    : "no little-endian level-5 header");
  }
  std::map<std::string, MatArray> variables;
  std::size_t at = kHeaderBytes;
  while (at + 8 <= bytes.size()) {
    Element element = reader.next(bytes, at);
    std::vector<std::uint8_t> inflated;
    if (element.type == kCompressed) {
      inflated = reader.inflate(element.data);
      std::size_t inner = 0;
      element = reader.next(inflated, inner);
    }
    if (element.type != kMatrix) continue;
    std::string name;
    MatArray array = reader.matrix(element.data, &name, 0);
    variables.emplace(std::move(name), std::move(array));
  }
  return variables;
}

}  // namespace ffcv::tools
