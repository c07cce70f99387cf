#include "common/output_guard.hpp"

#include <filesystem>

#include "common/arguments.hpp"

namespace ffcv::tools {
namespace fs = std::filesystem;
namespace {

fs::path resolved(const std::string& path) {
  std::error_code error;
  fs::path canonical = fs::weakly_canonical(fs::absolute(path, error), error);
  return error ? fs::path(path).lexically_normal() : canonical;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return resolved(a) == resolved(b);
}

// The number of path components `inner` lies below `outer`, or -1 when it is not below it.
int depth_below(const fs::path& inner, const fs::path& outer) {
  const fs::path relative = inner.lexically_relative(outer);
  if (relative.empty() || *relative.begin() == "..") return -1;
  return static_cast<int>(std::distance(relative.begin(), relative.end()));
}

}  // namespace

void check_output(const std::string& output, const OutputRules& rules) {
  const std::string& option = rules.option;
  if (output.empty()) throw UsageError(option + " is empty");
  std::error_code error;
  if (fs::is_directory(output, error)) {
    throw UsageError(option + " " + output + " is a folder; name the file to write");
  }
  for (const std::string& input : rules.input_files) {
    if (same_file(output, input)) {
      throw UsageError(option + " " + output + " is one of the inputs (" + input +
                       "); writing it would destroy it");
    }
  }
  const fs::path target = resolved(output);
  for (const InputFolder& folder : rules.input_folders) {
    const int depth = depth_below(target, resolved(folder.path));
    if (depth < 0 || (depth == 1 && folder.top_level_allowed)) continue;
    throw UsageError(option + " " + output + " is inside the input folder " + folder.path +
                     (folder.top_level_allowed ? " (in a class folder, read as input)" : "") +
                     "; write it elsewhere");
  }
  if (fs::exists(output, error) && rules.replaceable && !rules.replaceable(output) &&
      !rules.force) {
    throw UsageError(option + " " + output + " exists and is not " + rules.replaceable_kind +
                     "; pass --force to replace it");
  }
}

}  // namespace ffcv::tools
