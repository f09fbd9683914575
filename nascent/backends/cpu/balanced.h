// balanced_for: parallel_for with the range cut into up to four tasks per
// thread, claimed as threads come free. On a machine shared with other jobs
// a thread that gets less CPU then takes fewer tasks instead of holding the
// others up at the end, as an even static split would. Used by the image
// kernels (conv, pool), whose tasks are whole images or planes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

// fn(begin, end) on contiguous ranges of at least `grain` covering [0, n).
// A single range runs on the calling thread (so kernels it calls may still
// go parallel themselves).
inline void balanced_for(int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t threads = num_threads();
  grain = std::max<int64_t>(grain, 1);
  const int64_t tasks = std::min<int64_t>(4 * threads, (n + grain - 1) / grain);
  // One thread: run here, not as tasks of an empty pool (which may run them
  // under its lock, where a nested parallel call would wait forever).
  if (threads <= 1 || tasks <= 1) {
    fn(0, n);
    return;
  }
  parallel_tasks(int(tasks), [&](int t) {
    const int64_t begin = n * t / tasks, end = n * (t + 1) / tasks;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace nascent::cpu
