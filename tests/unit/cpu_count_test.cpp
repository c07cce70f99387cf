// "0 workers" follows the process's CPU affinity, not the machine's core count.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "ffcv/util/cpu_count.hpp"

TEST_CASE("available_cores counts the cores this process may run on", "[cpu_count]") {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(::sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  CHECK(ffcv::available_cores() == CPU_COUNT(&allowed));
  CHECK(ffcv::resolve_worker_count(3) == 3);
  CHECK(ffcv::resolve_worker_count(0) == CPU_COUNT(&allowed));

  // Pinned to one core (in a child, so that this process keeps its affinity).
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int first = 0;
    while (!CPU_ISSET(first, &allowed)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    const bool ok = ::sched_setaffinity(0, sizeof one, &one) == 0 && ffcv::available_cores() == 1 &&
                    ffcv::resolve_worker_count(0) == 1;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
