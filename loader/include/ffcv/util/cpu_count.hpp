// What "0 workers" means everywhere: one worker per core this process may run on.
//
// The count is the process's CPU affinity (sched_getaffinity), not the machine's core count: a
// process pinned to a share of the cores (taskset, a cgroup cpuset, a scheduler's allocation,
// several models per node) gets that share, where std::thread::hardware_concurrency() would
// report every core of the machine and oversubscribe them.
#pragma once

#include <string>
#include <vector>

namespace ffcv {

// The number of cores in this process's affinity mask; at least 1.
int available_cores();

// The cores in this process's affinity mask, ascending (at least one entry).
std::vector<int> affinity_cpus();

// "0-3,8": a CPU list as taskset and /proc print it.
std::string cpu_list_text(const std::vector<int>& cpus);

// `requested` when positive, otherwise available_cores().
int resolve_worker_count(int requested);

}  // namespace ffcv
