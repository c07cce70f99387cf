#include "python_values.hpp"

#include <utility>
#include <vector>

#include "ffcv/util/closest_name.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::python {
namespace {

std::string type_of(nb::handle value) {
  return nb::cast<std::string>(nb::str(value.type().attr("__name__")));
}

ParamValue param_value(nb::handle value, const std::string& what) {
  if (nb::isinstance<nb::bool_>(value)) return nb::cast<bool>(value);
  if (nb::isinstance<nb::int_>(value)) return nb::cast<std::int64_t>(value);
  if (nb::isinstance<nb::float_>(value)) return nb::cast<double>(value);
  if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
  if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    std::vector<double> numbers;
    for (nb::handle item : value) {
      if (!nb::isinstance<nb::int_>(item) && !nb::isinstance<nb::float_>(item)) {
        throw ConfigError(what + " must be a list of numbers, got an element of type " +
                          type_of(item));
      }
      numbers.push_back(nb::cast<double>(item));
    }
    return numbers;
  }
  throw ConfigError(what + " must be a bool, int, float, str or a list of numbers, got " +
                    type_of(value));
}

// The bytes of a C-contiguous CPU array.
std::vector<std::uint8_t> array_bytes(const nb::ndarray<nb::ro, nb::device::cpu>& array) {
  const std::uint8_t* data = static_cast<const std::uint8_t*>(array.data());
  return std::vector<std::uint8_t>(data, data + array.nbytes());
}

// Whether `value` is a numpy array of big-endian elements ('>' in its dtype's byte order).
bool is_big_endian_array(nb::handle value) {
  if (!nb::hasattr(value, "dtype")) return false;
  const nb::object dtype = value.attr("dtype");
  return nb::hasattr(dtype, "byteorder") &&
         nb::cast<std::string>(nb::str(dtype.attr("byteorder"))) == ">";
}

nb::ndarray<nb::ro, nb::device::cpu> contiguous_array(nb::handle value, const std::string& what) {
  nb::ndarray<nb::ro, nb::device::cpu> array;
  if (!nb::try_cast(value, array, false)) {
    // A numpy array that DLPack cannot describe: say which element type it has.
    const std::string dtype = nb::hasattr(value, "dtype")
                                  ? nb::cast<std::string>(nb::str(value.attr("dtype").attr("str")))
                                  : "";
    if (is_big_endian_array(value)) {
      throw ConfigError(what + " takes little-endian arrays, got one of the big-endian type " +
                        dtype + " (array.astype(array.dtype.newbyteorder('<')) converts it)");
    }
    throw ConfigError(what +
                      " must be an array on the CPU (numpy) of bool, int, uint or float "
                      "elements, got " +
                      type_of(value) + (dtype.empty() ? "" : " of type " + dtype));
  }
  if (array.size() == 0) return array;  // no element to read: any strides will do
  std::int64_t expected = 1;
  for (std::size_t d = array.ndim(); d-- > 0;) {
    if (array.shape(d) > 1 && array.stride(d) != expected) {
      throw ConfigError(what + " must be C-contiguous (numpy.ascontiguousarray makes it so)");
    }
    expected *= static_cast<std::int64_t>(array.shape(d));
  }
  return array;
}

// The numpy kinds (DType::kind) a .beton stores and their DLPack codes, both ways.
constexpr std::pair<char, nb::dlpack::dtype_code> kKinds[] = {
    {'i', nb::dlpack::dtype_code::Int},
    {'u', nb::dlpack::dtype_code::UInt},
    {'f', nb::dlpack::dtype_code::Float},
    {'b', nb::dlpack::dtype_code::Bool},
};

DType dtype_of(const nb::dlpack::dtype& type, const std::string& what) {
  for (const auto& [kind, code] : kKinds) {
    if (type.code != static_cast<std::uint8_t>(code)) continue;
    DType dtype;
    dtype.kind = kind;
    dtype.itemsize = type.bits / 8;
    dtype.byte_order = dtype.itemsize == 1 ? '|' : '<';
    return dtype;
  }
  throw ConfigError(what + " has an element type the format cannot store");
}

std::vector<std::uint8_t> bytes_of(nb::handle value) {
  const nb::bytes bytes = nb::borrow<nb::bytes>(value);
  const auto* data = static_cast<const std::uint8_t*>(bytes.data());
  return std::vector<std::uint8_t>(data, data + bytes.size());
}

RgbImage rgb_image(nb::handle value, const std::string& what) {
  const auto array = contiguous_array(value, what);
  if (array.ndim() != 3 || array.shape(2) != 3 || array.dtype() != nb::dtype<std::uint8_t>()) {
    throw ConfigError(what + " must be an (H, W, 3) uint8 array (RGB)");
  }
  RgbImage image;
  image.height = static_cast<int>(array.shape(0));
  image.width = static_cast<int>(array.shape(1));
  image.pixels = array_bytes(array);
  return image;
}

}  // namespace

OpParams op_params(const nb::dict& params, const std::string& step) {
  OpParams result;
  for (auto [key, value] : params) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    result.set(name, param_value(value, step + " parameter '" + name + "'"));
  }
  return result;
}

void apply_settings(const nb::dict& values, LoaderSettings& settings) {
  const std::vector<SettingRow> rows = loader_setting_rows(settings);
  for (auto [key, value] : values) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    const SettingRow* found = nullptr;
    for (const SettingRow& row : rows) {
      if (row.name == name) found = &row;
    }
    if (found == nullptr) {
      const std::string near = closest_name(name, loader_setting_names());
      throw ConfigError("unknown loader setting '" + name + "'" +
                        (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
    // Python's True/False are spelt as the table reads them.
    const std::string text = nb::isinstance<nb::bool_>(value)
                                 ? (nb::cast<bool>(value) ? "true" : "false")
                                 : nb::cast<std::string>(nb::str(value));
    set_setting(*found, text);
  }
}

nb::dlpack::dtype dlpack_dtype(const DType& dtype) {
  if (dtype.byte_order == '>' && dtype.itemsize > 1) {
    throw ConfigError("the big-endian type " + dtype.typestr() +
                      " cannot leave the loader (DLPack has no byte order); write the field "
                      "little-endian, as ffcv_cpp's writer and `ffcv write npy` do");
  }
  for (const auto& [kind, code] : kKinds) {
    if (dtype.kind != kind) continue;
    nb::dlpack::dtype type{};
    type.code = static_cast<std::uint8_t>(code);
    type.bits = static_cast<std::uint8_t>(dtype.itemsize * 8);
    type.lanes = 1;
    return type;
  }
  throw ConfigError("the type " + dtype.typestr() + " has no DLPack equivalent");
}

FieldValue field_value(nb::handle value, const std::string& kind, const std::string& field) {
  const std::string what = "field '" + field + "'";
  if (kind == "rgb_image") {
    if (!nb::isinstance<nb::bytes>(value)) return rgb_image(value, what);
    // An encoded JPEG, decoded (and shrunk to the field's max resolution) by the writer's
    // threads as `ffcv write folder` does its JPEG files.
    std::vector<std::uint8_t> bytes = bytes_of(value);
    if (bytes.size() < 3 || bytes[0] != 0xFF || bytes[1] != 0xD8 || bytes[2] != 0xFF) {
      throw ConfigError(what +
                        " takes encoded images as JPEG bytes only; decode other formats "
                        "(e.g. with PIL) and pass the pixels");
    }
    return JpegFile{std::move(bytes)};
  }
  if (kind == "int") {
    if (!nb::isinstance<nb::int_>(value) && !nb::hasattr(value, "__index__")) {
      throw ConfigError(what + " takes an int, got " + type_of(value));
    }
    const nb::object number = value.attr("__index__")();
    int overflow = 0;
    const long long result = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
    if (overflow != 0) {
      throw ConfigError(what + " takes 64-bit signed integers (-2**63 to 2**63 - 1), got " +
                        nb::cast<std::string>(nb::str(number)));
    }
    if (result == -1 && PyErr_Occurred() != nullptr) throw nb::python_error();
    return static_cast<std::int64_t>(result);
  }
  if (kind == "float") {
    if (!nb::hasattr(value, "__float__")) {
      throw ConfigError(what + " takes a float, got " + type_of(value));
    }
    return nb::cast<double>(value.attr("__float__")());
  }
  if (kind == "ndarray" || kind == "torch_tensor" || kind == "ragged_ndarray") {
    const auto array = contiguous_array(value, what);
    NdArray result;
    result.dtype = dtype_of(array.dtype(), what);
    for (std::size_t d = 0; d < array.ndim(); ++d) result.shape.push_back(array.shape(d));
    result.bytes = array_bytes(array);
    return result;
  }
  if (kind == "bytes") {
    if (nb::isinstance<nb::bytes>(value)) return Bytes(bytes_of(value));
    const auto array = contiguous_array(value, what);
    if (array.dtype() != nb::dtype<std::uint8_t>() || array.ndim() != 1) {
      throw ConfigError(what + " takes bytes or a 1-D uint8 array");
    }
    return Bytes(array_bytes(array));
  }
  if (kind == "json") {
    if (!nb::isinstance<nb::str>(value)) {
      throw ConfigError(what + " takes JSON text, got " + type_of(value));
    }
    return JsonText{nb::cast<std::string>(value)};
  }
  throw ConfigError(what + ": unknown field kind '" + kind + "'");
}

}  // namespace ffcv::python
