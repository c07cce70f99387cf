#include "ffcv/cpu_count.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace ffcv {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int resolve_worker_count(int requested) { return requested > 0 ? requested : available_cores(); }

}  // namespace ffcv
