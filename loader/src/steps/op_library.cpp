#include "ffcv/steps/op_library.hpp"

#include <dlfcn.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

constexpr const char* kAbiSymbol = "ffcv_op_library_abi";
constexpr const char* kRegisterSymbol = "ffcv_register_ops";

using AbiFunction = int (*)();
using RegisterFunction = void (*)(OpRegistry&);

// Closes a handle unless released: failed loads leave nothing mapped.
class HandleGuard {
 public:
  explicit HandleGuard(void* handle) : handle_(handle) {}
  ~HandleGuard() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  HandleGuard(const HandleGuard&) = delete;
  HandleGuard& operator=(const HandleGuard&) = delete;
  void* release() { return std::exchange(handle_, nullptr); }

 private:
  void* handle_;
};

std::string dl_error_text(const std::string& path) {
  const char* text = ::dlerror();
  std::string error = text != nullptr ? text : "unknown dlopen error";
  // dlerror() usually starts with the path, which the message already names.
  if (error.starts_with(path + ": ")) error.erase(0, path.size() + 2);
  return error;
}

}  // namespace

void load_op_library(const std::string& path) {
  // Libraries already loaded, by resolved path; their handles stay open for good.
  static std::mutex mutex;
  static std::map<std::string, void*> loaded;
  const std::string what = "op library " + path;

  char resolved_buffer[PATH_MAX];
  if (::realpath(path.c_str(), resolved_buffer) == nullptr) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) throw ConfigError(what + ": no such file");
    throw IoError(path, "resolve", error);
  }
  const std::string resolved = resolved_buffer;

  std::lock_guard lock(mutex);
  if (loaded.contains(resolved)) return;

  ::dlerror();
  void* handle = ::dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw ConfigError(what + ": cannot load: " + dl_error_text(resolved));
  HandleGuard guard(handle);

  const auto abi = reinterpret_cast<AbiFunction>(::dlsym(handle, kAbiSymbol));
  const auto register_ops = reinterpret_cast<RegisterFunction>(::dlsym(handle, kRegisterSymbol));
  if (abi == nullptr || register_ops == nullptr) {
    std::string missing = abi == nullptr ? kAbiSymbol : "";
    if (register_ops == nullptr)
      missing += (missing.empty() ? "" : " and ") + std::string(kRegisterSymbol);
    throw ConfigError(what + " does not export " + missing +
                      " (FFCV_OP_LIBRARY from ffcv/steps/op_library.hpp defines both)");
  }
  const int library_abi = abi();
  if (library_abi != kOpLibraryAbi) {
    throw ConfigError(what + " was built for op library ABI " + std::to_string(library_abi) +
                      ", this loader has ABI " + std::to_string(kOpLibraryAbi) +
                      "; rebuild it against this loader's headers");
  }

  std::string failure;
  {
    // The staged factories are the library's code: they are gone before the guard may close it.
    OpRegistry staged;
    try {
      register_ops(staged);
    } catch (const Error& error) {
      failure = ": " + std::string(error.what());
    } catch (const std::exception& error) {
      failure = ": " + std::string(kRegisterSymbol) + " failed: " + error.what();
    } catch (...) {
      failure = ": " + std::string(kRegisterSymbol) + " threw a non-standard exception";
    }
    if (failure.empty() && staged.empty())
      failure = " registers no step (decoder, operation or batch operation)";
    if (failure.empty()) {
      try {
        OpRegistry::global().add_all(staged);
      } catch (const ConfigError& error) {
        failure =
            ": " + std::string(error.what()) + " (a library cannot replace a registered step)";
      }
    }
  }
  if (!failure.empty()) throw ConfigError(what + failure);
  loaded.emplace(resolved, guard.release());
}

}  // namespace ffcv
