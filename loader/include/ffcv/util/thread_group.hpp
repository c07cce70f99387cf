// The project's threads: ThreadGroup owns a set of threads that run one function and are joined
// together; parallel_for runs an index range on a group and brings back its first error.
//
// Every program of the project that starts threads of its own does it through these two (the
// loader's workers, the process cache's readers, the dataset writer's encoders, the generator of
// ImageNet-like folders, `ffcv inspect --verify`, the runs of a grid trained together), so the
// rules below hold everywhere and a fix to them lands once.
//
// Threading: a ThreadGroup is started and joined by one owning thread. Its threads must be told
// to stop by their owner (a flag and a condition variable, as each owner has its own); join()
// only waits. The destructor joins, so a group never outlives its threads and never calls
// std::terminate on a joinable thread.
//
// Errors: start() throws std::system_error when the system refuses a thread; the threads started
// before it keep running and stay in the group, so the owner's usual stop-and-join path ends
// them. parallel_for rethrows the first exception of any body (or on_tick) once every thread has
// joined; the indices not yet taken are not run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace ffcv {

class ThreadGroup {
 public:
  ThreadGroup() = default;
  ~ThreadGroup() { join(); }
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  // Starts `count` more threads, the i-th running body(i) (i counts from 0 in each call).
  void start(int count, const std::function<void(int)>& body);
  // Waits for every thread of the group to return; the group is then empty.
  void join();
  bool empty() const { return threads_.empty(); }
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  std::vector<std::thread> threads_;
};

// Runs body(k) for every k in [0, n) on min(resolve_worker_count(workers), n) threads, each
// taking the next index; at least one thread when n > 0. The calling thread waits, calling
// on_tick(done) about every `tick` while work remains (done: the bodies that returned).
void parallel_for(std::uint64_t n, int workers, const std::function<void(std::uint64_t)>& body,
                  const std::function<void(std::uint64_t)>& on_tick = {},
                  std::chrono::milliseconds tick = std::chrono::milliseconds(100));

}  // namespace ffcv
