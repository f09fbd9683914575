// The CPU backend's worker threads. parallel_for splits [0, n) into chunks of
// at least `grain` and runs them on the pool, the caller included. Thread
// count: NASCENT_NUM_THREADS at start-up, else the hardware's, and
// set_num_threads() at any time. Between jobs a worker spins for
// NASCENT_SPIN_US microseconds (default 2000; 0 sleeps at once) before it
// sleeps, as the caller does while it waits for a job's end. A wasm build
// without threads runs everything on the calling thread: num_threads() is then
// 1 whatever was asked.
#pragma once

#include <cstdint>
#include <functional>

namespace nascent::cpu {

// Threads a parallel call made here would use: 1 inside a worker.
int num_threads();
void set_num_threads(int n);

// fn(begin, end) runs on disjoint ranges covering [0, n). Nested calls from
// inside a worker run serially in that worker.
void parallel_for(int64_t n, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// Runs fn(task) for task in [0, tasks), one task per thread at most at a
// time; for kernels that partition work themselves (GEMM). Tasks start in
// increasing order (each thread takes the lowest not yet started), so a
// task may wait for lower tasks to finish, never for higher ones.
void parallel_tasks(int tasks, const std::function<void(int)>& fn);

}  // namespace nascent::cpu
