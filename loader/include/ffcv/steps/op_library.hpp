// User operations from a shared library loaded at run time.
//
// Custom augmentations (operations, batch operations, decoders) need no rebuild of the loader or
// the CLI: they live in a shared library built against these headers, and load_op_library() adds
// what it registers to OpRegistry::global(), where pipelines built by name find them
// (make_operation(), `ffcv bench --op-library PATH --op NAME`). A whole library is a few lines:
//
//   #include "ffcv/steps/op_library.hpp"
//
//   class MyOp final : public ffcv::Operation { ... };
//
//   FFCV_OP_LIBRARY(registry) {
//     registry.register_operation("my_op", "one line for listings",
//                                 [](const ffcv::OpParams& params) { ... });
//   }
//
// A step may also declare its parameters, as the built-in ones do (ffcv/steps/step_schema.hpp):
//
//     registry.register_operation(
//         "my_op", "one line for listings",
//         {{"order", ffcv::ParamKind::kNumbers, ffcv::defaults_to({2.0, 1.0, 0.0}), ffcv::any(),
//           "source channel of each output channel"}},
//         [](const ffcv::OpParams& params) { ... params.require_list("order") ... });
//
// and then gets the same checks and messages (unknown names with the nearest declared one, kinds,
// rules) and its defaults filled in. Without a declaration a step stays allowed: its factory
// reads the parameters with its own fallbacks, and a given parameter it did not read is an error.
//
// built with `-shared -fPIC` and no loader library on its link line: the loader symbols it uses
// (OpRegistry, OpParams, ConfigError, ...) resolve to the program's own copy when it is loaded,
// which is why every executable linking ffcv::loader exports the ffcv:: symbols
// (loader/op_library_symbols.list). Only what the program itself links in is there.
//
// The library and the program share C++ types (std::string, std::function, std::shared_ptr,
// Operation's vtable), so the library must be built with the same compiler family, standard
// library and loader headers. kOpLibraryAbi versions that contract; a library built for another
// version is refused before any of its code runs.
#pragma once

#include <string>

#include "ffcv/steps/op_registry.hpp"

namespace ffcv {

// The version of the interface an op library is compiled against: Decoder, Operation,
// BatchOperation, their contexts, TensorState, OpParams and OpRegistry. Raised whenever one of them
// changes in a way a compiled library would notice (a virtual function, a member, a signature).
// 2: OpRegistry holds each step's optional parameter declaration (StepSchema).
inline constexpr int kOpLibraryAbi = 2;

// Loads the shared library at `path` (dlopen with RTLD_NOW | RTLD_LOCAL), checks that it exports
// ffcv_op_library_abi() returning kOpLibraryAbi and ffcv_register_ops(), lets the latter
// register into an empty registry, then adds all of it to OpRegistry::global() (all or nothing).
// Loading a path already loaded (the same file, however named) does nothing. A loaded library
// stays loaded for the life of the process: the registry holds its code.
//
// Throws ConfigError, one line naming the path, for a missing file, a file dlopen refuses (with
// dlerror's reason), a missing entry point, a different ABI (both versions), a library that
// registers no step, a registration that throws, or a name already registered (a library cannot
// replace a built-in or another library's step).
void load_op_library(const std::string& path);

}  // namespace ffcv

// Marks a function as an entry point of an op library: C linkage, visible outside the library.
#define FFCV_OP_LIBRARY_EXPORT extern "C" __attribute__((visibility("default")))

// Defines both entry points of an op library; the block that follows is the body of
// ffcv_register_ops and gets the registry as `registry_param`.
#define FFCV_OP_LIBRARY(registry_param)                                              \
  FFCV_OP_LIBRARY_EXPORT int ffcv_op_library_abi() { return ::ffcv::kOpLibraryAbi; } \
  FFCV_OP_LIBRARY_EXPORT void ffcv_register_ops(::ffcv::OpRegistry& registry_param)
