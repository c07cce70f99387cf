// convert: casts every element to `dtype` (numpy astype semantics: floats to integers truncate
// toward zero; integers wrap), keeping the shape.
//
// replace_label: sets an int64 label to `label` for the samples whose dataset index is listed in
// `indices` (FFCV's ReplaceLabel, for data-poisoning and label-noise studies).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ffcv/util/errors.hpp"
#include "ffcv/util/little_endian.hpp"
#include "half_float.hpp"
#include "index_set.hpp"
#include "ops.hpp"

namespace ffcv {
namespace {

double load_element(const std::uint8_t* p, const DType& type) {
  switch (type.kind) {
    case 'b':
    case 'u':
      switch (type.itemsize) {
        case 1:
          return *p;
        case 2:
          return load_le<std::uint16_t>(p);
        case 4:
          return load_le<std::uint32_t>(p);
        default:
          return static_cast<double>(load_le<std::uint64_t>(p));
      }
    case 'i':
      switch (type.itemsize) {
        case 1:
          return static_cast<std::int8_t>(*p);
        case 2:
          return load_le<std::int16_t>(p);
        case 4:
          return load_le<std::int32_t>(p);
        default:
          return static_cast<double>(load_le<std::int64_t>(p));
      }
    default:
      switch (type.itemsize) {
        case 2:
          return half_to_float(load_le<std::uint16_t>(p));
        case 4:
          return load_le<float>(p);
        default:
          return load_le<double>(p);
      }
  }
}

void store_element(std::uint8_t* p, const DType& type, double value) {
  if (type.kind == 'f') {
    switch (type.itemsize) {
      case 2:
        store_le(p, float_to_half(static_cast<float>(value)));
        return;
      case 4:
        store_le(p, static_cast<float>(value));
        return;
      default:
        store_le(p, value);
        return;
    }
  }
  if (type.kind == 'b') {
    *p = value != 0;
    return;
  }
  // Truncate toward zero, then wrap into the integer type (numpy's astype on x86).
  const double truncated = std::isfinite(value) ? std::trunc(value) : 0.0;
  const auto wide = static_cast<std::int64_t>(
      std::clamp(truncated, -9.2233720368547758e18, 9.2233720368547748e18));
  const auto bits = static_cast<std::uint64_t>(wide);
  switch (type.itemsize) {
    case 1:
      *p = static_cast<std::uint8_t>(bits);
      return;
    case 2:
      store_le(p, static_cast<std::uint16_t>(bits));
      return;
    case 4:
      store_le(p, static_cast<std::uint32_t>(bits));
      return;
    default:
      store_le(p, bits);
      return;
  }
}

class Convert final : public Operation {
 public:
  explicit Convert(const std::string& dtype) : target_(DType::parse(dtype)) {
    if (target_.byte_order == '>' || target_.kind == 'c') {
      throw ConfigError("convert: unsupported target dtype " + target_.typestr());
    }
  }
  std::string name() const override { return "convert"; }
  PixelGeometry pixel_geometry() const override { return PixelGeometry::kKeeps; }
  TensorState declare(const TensorState& input) override {
    if (input.dtype.byte_order == '>' || input.dtype.kind == 'c') {
      throw ConfigError("convert: unsupported input dtype " + input.dtype.typestr());
    }
    source_ = input.dtype;
    elements_ = input.element_count();
    return {target_, input.shape, input.device};
  }
  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext&) const override {
    for (std::uint64_t i = 0; i < elements_; ++i) {
      store_element(output + i * target_.itemsize, target_,
                    load_element(input + i * source_.itemsize, source_));
    }
  }

 private:
  DType target_, source_;
  std::uint64_t elements_ = 0;
};

class ReplaceLabel final : public Operation {
 public:
  ReplaceLabel(const std::vector<double>& indices, std::int64_t label)
      : indices_(indices, "replace_label"), label_(label) {}
  std::string name() const override { return "replace_label"; }
  TensorState declare(const TensorState& input) override {
    if (input.dtype.kind != 'i' || input.dtype.itemsize != 8 || input.element_count() != 1) {
      throw ConfigError("replace_label needs an int64 [1] label, got " + input.to_string());
    }
    return input;
  }
  void apply(const std::uint8_t* input, std::uint8_t* output, std::span<std::uint8_t>,
             const SampleContext& context) const override {
    if (indices_.contains(context.index)) {
      store_le(output, label_);
    } else {
      std::memcpy(output, input, 8);
    }
  }

 private:
  IndexSet indices_;
  std::int64_t label_;
};

}  // namespace

std::shared_ptr<Operation> make_convert(const OpParams& params) {
  return std::make_shared<Convert>(params.require_string("dtype"));
}

std::shared_ptr<Operation> make_replace_label(const OpParams& params) {
  return std::make_shared<ReplaceLabel>(params.require_list("indices"),
                                        params.require_int("label"));
}

}  // namespace ffcv
