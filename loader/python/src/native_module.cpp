// ffcv_cpp._native: the loader core for Python. The package's modules (ffcv_cpp.loader,
// ffcv_cpp.writer, ...) give it Python FFCV's API; this module holds only what runs natively.
//
// Errors: a ConfigError (a bad argument, setting or step) is a ValueError; an IoError (a file or
// server that cannot be read or written) an OSError, of the subclass its errno picks
// (FileNotFoundError for ENOENT, PermissionError, ...) as Python's own file functions raise; a
// FormatError (a damaged .beton) and every other error of the core a RuntimeError, each with the
// core's message.
#include "bindings.hpp"
#include "ffcv/util/errors.hpp"

namespace nb = nanobind;

namespace ffcv::python {

void bind_errors(nb::module_& /*module*/) {
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const IoError& e) {
      if (e.errno_value() == 0) {
        PyErr_SetString(PyExc_OSError, e.what());
        return;
      }
      // OSError(errno, text) constructs the subclass of that errno.
      nb::object error = nb::borrow(PyExc_OSError)(e.errno_value(), e.what());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace ffcv::python

NB_MODULE(_native, module) {
  module.doc() = "The loader core of ffcv_cpp (the .beton reader, loader engine and writer).";
  ffcv::python::bind_errors(module);
  ffcv::python::bind_settings(module);
  ffcv::python::bind_loader(module);
  ffcv::python::bind_writer(module);
}
