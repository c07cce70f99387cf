#include "ffcv/util/available_memory.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace ffcv {
namespace {

std::uint64_t read_number(const char* path) {
  std::ifstream in(path);
  std::uint64_t value = 0;
  return in >> value ? value : 0;
}

}  // namespace

std::uint64_t available_memory_bytes() {
  std::uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") {
      available = value * 1024;
      break;
    }
  }
  // memory.max reads "max" when the cgroup has no limit: read_number gives 0 then.
  const std::uint64_t limit = read_number("/sys/fs/cgroup/memory.max");
  if (limit > 0) {
    const std::uint64_t used = read_number("/sys/fs/cgroup/memory.current");
    const std::uint64_t left = limit > used ? limit - used : 0;
    available = available == 0 ? left : std::min(available, left);
  }
  return available;
}

}  // namespace ffcv
