// The parts of ffcv_cpp._native, each adding its classes and functions to the module
// (native_module.cpp calls them in this order).
#pragma once

#include <nanobind/nanobind.h>

namespace ffcv::python {

void bind_errors(nanobind::module_& module);    // native_module.cpp
void bind_settings(nanobind::module_& module);  // settings_binding.cpp
void bind_loader(nanobind::module_& module);    // loader_binding.cpp
void bind_writer(nanobind::module_& module);    // writer_binding.cpp

}  // namespace ffcv::python
