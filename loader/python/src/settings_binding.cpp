// What the package builds its API from: the loader-settings table (keyword arguments of
// ffcv_cpp.loader.Loader), the steps the registry knows, and normalize's lookup tables (for
// NormalizeImage on whole batches, so that it gives the CPU step's bits).

#include "bindings.hpp"
#include "ffcv/normalize_table.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "python_values.hpp"

namespace nb = nanobind;

namespace ffcv::python {
namespace {

// One dict per row of the settings table: name, default (as text), value (its kind, e.g.
// "N" or "fail|skip"), rule (its bounds, e.g. ">= 0") and doc.
nb::list loader_setting_table() {
  LoaderSettings defaults;
  nb::list rows;
  for (const SettingRow& row : loader_setting_rows(defaults)) {
    nb::dict entry;
    entry["name"] = std::string(row.name);
    entry["default"] = setting_text(row.slot);
    entry["value"] = setting_value_name(row);
    entry["rule"] = range_text(row.rule);
    entry["doc"] = std::string(row.doc);
    rows.append(entry);
  }
  return rows;
}

nb::dict step_names() {
  const OpRegistry& registry = OpRegistry::global();
  const auto names = [](const std::vector<std::pair<std::string, std::string>>& steps) {
    std::vector<std::string> out;
    for (const auto& step : steps) out.push_back(step.first);
    return out;
  };
  nb::dict out;
  out["decoders"] = names(registry.decoders());
  out["operations"] = names(registry.operations());
  out["batch_operations"] = names(registry.batch_operations());
  return out;
}

// The table as bytes: channels x 256 float32, or float16 bit patterns for "float16".
nb::bytes normalize_table(const std::vector<double>& mean, const std::vector<double>& std_dev,
                          const std::string& dtype) {
  const DType type = normalize_dtype(dtype, "NormalizeImage");
  const NormalizeTable table = make_normalize_table(mean, std_dev, "NormalizeImage");
  if (type.itemsize == 2) {
    return nb::bytes(reinterpret_cast<const char*>(table.f16.data()), table.f16.size() * 2);
  }
  return nb::bytes(reinterpret_cast<const char*>(table.f32.data()), table.f32.size() * 4);
}

}  // namespace

void bind_settings(nb::module_& module) {
  module.def("loader_setting_table", &loader_setting_table,
             "The loader settings (ffcv/settings/loader_settings.hpp), one dict per row.");
  module.def("loader_setting_names", &loader_setting_names);
  module.def("step_names", &step_names, "The registry's decoders, operations, batch operations.");
  module.def("normalize_table", &normalize_table, nb::arg("mean"), nb::arg("std"), nb::arg("dtype"),
             "normalize's lookup table (channels x 256) as float32 or float16 bytes.");
}

}  // namespace ffcv::python
