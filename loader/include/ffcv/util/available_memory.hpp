// How much memory this process may still allocate, for the checks that refuse work which cannot
// fit (a loader's batch ring, a grid's points, a SAGA run's tables) before it starts rather than
// letting the kernel kill it part-way.
#pragma once

#include <cstdint>

namespace ffcv {

// /proc/meminfo's MemAvailable, capped by the cgroup's memory.max less its memory.current when
// the process runs in a cgroup with a limit; 0 when neither can be read (then nothing is refused).
std::uint64_t available_memory_bytes();

}  // namespace ffcv
