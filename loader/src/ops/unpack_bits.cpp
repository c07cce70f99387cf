// unpack_bits: bit-packed booleans (uint8, as `ffcv write npy --pack-bits` and numpy.packbits
// with bitorder "big" store them: feature 0 in the most significant bit of byte 0) back to
// `count` values of 0 and 1 in `dtype` (float32, float16 or uint8), one per bit, in order. The
// padding bits after the last feature are not read. On the workers this turns a compact mask
// straight into the solver's input, in the batch slot, with no pass on the consumer's thread.
#include <cstring>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "half_float.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

// The 8 float32 values of each byte value, most significant bit first: a whole byte unpacks as
// one 32-byte copy.
struct ByteTable {
  float values[256][8];
  ByteTable() {
    for (int byte = 0; byte < 256; ++byte) {
      for (int bit = 0; bit < 8; ++bit)
        values[byte][bit] = static_cast<float>((byte >> (7 - bit)) & 1);
    }
  }
};
const ByteTable kFloatBits;

class UnpackBits final : public Operation {
 public:
  UnpackBits(std::int64_t count, const std::string& dtype)
      : count_(count), dtype_(DType::parse(dtype)) {
    const bool supported = (dtype_.kind == 'f' && (dtype_.itemsize == 4 || dtype_.itemsize == 2)) ||
                           (dtype_.kind == 'u' && dtype_.itemsize == 1);
    if (!supported) {
      throw ConfigError("unpack_bits: dtype must be float32, float16 or uint8, got " + dtype);
    }
  }
  std::string name() const override { return "unpack_bits"; }

  TensorState declare(const TensorState& input) override {
    const std::uint64_t packed = (static_cast<std::uint64_t>(count_) + 7) / 8;
    if (input.dtype.kind != 'u' || input.dtype.itemsize != 1 || input.element_count() != packed) {
      throw ConfigError("unpack_bits: count " + std::to_string(count_) + " needs " +
                        std::to_string(packed) + " packed bytes (uint8) per sample, got " +
                        input.to_string());
    }
    TensorState output;
    output.dtype = dtype_;
    output.shape = {static_cast<std::uint64_t>(count_)};
    output.device = input.device;
    return output;
  }

  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext&) const override {
    const auto count = static_cast<std::uint64_t>(count_);
    if (dtype_.kind == 'u') {
      for (std::uint64_t i = 0; i < count; ++i) output[i] = (input[i >> 3] >> (7 - (i & 7))) & 1;
    } else if (dtype_.itemsize == 4) {
      const std::uint64_t whole = count / 8;
      for (std::uint64_t byte = 0; byte < whole; ++byte) {
        std::memcpy(output + 32 * byte, kFloatBits.values[input[byte]], 32);
      }
      if (const std::uint64_t rest = count % 8; rest != 0) {
        std::memcpy(output + 32 * whole, kFloatBits.values[input[whole]], 4 * rest);
      }
    } else {
      const std::uint16_t one = float_to_half(1.0f), zero = float_to_half(0.0f);
      for (std::uint64_t i = 0; i < count; ++i) {
        store_le(output + 2 * i, ((input[i >> 3] >> (7 - (i & 7))) & 1) ? one : zero);
      }
    }
  }

 private:
  std::int64_t count_;
  DType dtype_;
};

}  // namespace

std::shared_ptr<Operation> make_unpack_bits(const OpParams& params) {
  return std::make_shared<UnpackBits>(params.require_int("count"), params.require_string("dtype"));
}

}  // namespace ffcv
