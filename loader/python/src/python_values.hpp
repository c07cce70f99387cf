// Conversions between Python values and the loader core's: step parameters, settings, sample
// values for the writer, and batch outputs as DLPack arrays. Used by the bindings of
// ffcv_cpp._native; every conversion that can fail throws ffcv::ConfigError naming what it read.
#pragma once

// Every file of the extension includes the same type casters (through this header): a file that
// casts std::string without stl/string.h would instantiate nanobind's generic caster instead,
// and the linker keeps one of the two.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>

#include "ffcv/format/dtype.hpp"
#include "ffcv/format/value.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/steps/op_params.hpp"

namespace ffcv::python {

namespace nb = nanobind;

// {"size": 160, "scale": (0.08, 1.0), "interpolation": "area", ...}: bool, int, float, str or a
// sequence of numbers per value. `step` names the step in errors.
OpParams op_params(const nb::dict& params, const std::string& step);

// {"num_workers": 8, "order": "random", ...}, keyed by the settings table's names: sets each on
// `settings` through its row's rule. An unknown name is refused with the nearest known one.
void apply_settings(const nb::dict& values, LoaderSettings& settings);

// The DLPack element type of `dtype`; ConfigError for a big-endian or complex type, which DLPack
// consumers cannot take as stored.
nb::dlpack::dtype dlpack_dtype(const DType& dtype);

// One value of a sample for the writer, as a field of kind `kind` ("rgb_image", "int", "float",
// "ndarray", "bytes", "json") takes it: an (H, W, 3) uint8 array or a JPEG file's bytes, an int,
// a float, an array, bytes or JSON text (str).
FieldValue field_value(nb::handle value, const std::string& kind, const std::string& field);

}  // namespace ffcv::python
