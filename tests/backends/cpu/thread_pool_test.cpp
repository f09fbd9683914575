#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"

namespace nascent::cpu {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(num_threads(), threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(n, 10, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)], 1) << i;
    }
  }
  set_num_threads(2);
}

TEST(ThreadPool, NestedCallsRunSerially) {
  set_num_threads(2);
  std::atomic<int64_t> total{0};
  parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      parallel_for(100, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPool, ManyShortJobsDoNotLoseTasks) {
  set_num_threads(2);
  std::atomic<int> count{0};
  for (int job = 0; job < 2000; ++job) {
    parallel_tasks(3, [&](int) { count++; });
  }
  EXPECT_EQ(count.load(), 6000);
}

TEST(ThreadPool, RejectsZeroThreads) {
  EXPECT_THROW(set_num_threads(0), ValueError);
}

}  // namespace
}  // namespace nascent::cpu
