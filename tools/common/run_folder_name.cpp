#include "common/run_folder_name.hpp"

#include <ctime>
#include <filesystem>

namespace ffcv::tools {

std::string run_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return stamp;
}

std::string new_run_dir(const std::string& folder, const std::string& name) {
  const std::string base = folder + "/" + name + "-" + run_stamp();
  std::string dir = base;
  for (int n = 2; std::filesystem::exists(dir); ++n) dir = base + "-" + std::to_string(n);
  return dir;
}

}  // namespace ffcv::tools
