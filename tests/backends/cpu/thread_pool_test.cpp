// The CPU thread pool: every index or task runs exactly once, for any thread
// count, nesting included; bad thread counts are rejected. Also checks that
// a wasm build without threads runs everything on the calling thread.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/error.h"

namespace nascent::cpu {
namespace {

// Mirrors thread_pool.cpp: emscripten without -pthread cannot start threads.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
constexpr bool kThreads = false;
#else
constexpr bool kThreads = true;
#endif

// Restores the thread count a test changed.
class ThreadPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = num_threads(); }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

// Counts how often each index of [0, n) was visited.
std::vector<int> visits(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    ASSERT_LE(0, begin);
    ASSERT_LT(begin, end);
    ASSERT_LE(end, n);
    for (int64_t i = begin; i < end; ++i) count[size_t(i)].fetch_add(1);
  });
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}

TEST_F(ThreadPoolTest, ThreadCountFollowsSetNumThreads) {
  for (int n : {1, 3, 4, 1}) {
    set_num_threads(n);
    EXPECT_EQ(num_threads(), kThreads ? n : 1) << "asked for " << n;
  }
}

TEST_F(ThreadPoolTest, ParallelForVisitsEveryIndexOnce) {
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    for (int64_t n : {1, 2, 3, 7, 64, 1000, 100003}) {
      for (int64_t grain : {1, 5, 1024}) {
        std::vector<int> v = visits(n, grain);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(v[size_t(i)], 1)
              << "index " << i << " of " << n << ", grain " << grain << ", "
              << threads << " threads";
        }
      }
    }
  }
}

TEST_F(ThreadPoolTest, EmptyRangeRunsNothing) {
  set_num_threads(4);
  int calls = 0;
  parallel_for(0, 1, [&](int64_t, int64_t) { ++calls; });
  parallel_for(-5, 1, [&](int64_t, int64_t) { ++calls; });
  parallel_tasks(0, [&](int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST_F(ThreadPoolTest, NestedParallelForCompletes) {
  set_num_threads(4);
  constexpr int64_t kOuter = 16, kInner = 1000;
  std::vector<std::atomic<int>> count(static_cast<size_t>(kOuter * kInner));
  parallel_for(kOuter, 1, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      parallel_for(kInner, 1, [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; ++i) {
          count[size_t(o * kInner + i)].fetch_add(1);
        }
      });
    }
  });
  for (size_t i = 0; i < count.size(); ++i) {
    ASSERT_EQ(count[i].load(), 1) << "index " << i;
  }
}

TEST_F(ThreadPoolTest, ParallelTasksRunsEachTaskOnce) {
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (int tasks : {1, 2, 5, 64}) {
      std::vector<std::atomic<int>> count(static_cast<size_t>(tasks));
      parallel_tasks(tasks, [&](int t) { count[size_t(t)].fetch_add(1); });
      for (int t = 0; t < tasks; ++t) {
        EXPECT_EQ(count[size_t(t)].load(), 1)
            << "task " << t << " of " << tasks << ", " << threads << " threads";
      }
    }
  }
}

// Four chunks of 50 ms: with threads, the workers wake long before the caller
// could finish them all; without, the caller runs every one.
TEST_F(ThreadPoolTest, WorkLeavesTheCallerOnlyWithThreads) {
  set_num_threads(4);
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> chunks{0}, elsewhere{0};
  parallel_for(4, 1, [&](int64_t, int64_t) {
    chunks.fetch_add(1);
    if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  EXPECT_EQ(chunks.load(), kThreads ? 4 : 1);
  if (kThreads) {
    EXPECT_GT(elsewhere.load(), 0);
  } else {
    EXPECT_EQ(elsewhere.load(), 0);
  }
}

// Back-to-back short jobs: a worker that wakes late must not run a task of
// the next job with the previous job's function (a race fixed in the pool).
TEST_F(ThreadPoolTest, ManyShortJobsDoNotLoseOrRepeatTasks) {
  set_num_threads(2);
  std::atomic<int> count{0};
  for (int job = 0; job < 2000; ++job) {
    parallel_tasks(3, [&](int) { count.fetch_add(1); });
  }
  EXPECT_EQ(count.load(), 6000);
}

// A task that throws must reach the caller, not terminate the process from
// a worker, and the pool must keep working afterwards.
TEST_F(ThreadPoolTest, ExceptionInATaskReachesTheCaller) {
  set_num_threads(2);
  for (int round = 0; round < 20; ++round) {
    EXPECT_THROW(parallel_tasks(4,
                                [&](int t) {
                                  if (t == round % 4) {
                                    throw ValueError("task failed");
                                  }
                                }),
                 ValueError);
  }
  std::atomic<int> count{0};
  parallel_tasks(4, [&](int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 4);
}

// Tasks start in increasing order, so a task may wait for the lower ones
// (GEMM packs B in the first tasks of a job and computes in the rest): the
// upper half waits for the lower half to finish, on every thread count.
// Out of order, a waiting task would hold a thread that a lower task
// needs; the wait gives up after 10 s so that such a bug fails the test
// instead of hanging it.
TEST_F(ThreadPoolTest, TasksStartInOrderSoTheyMayWaitForLowerOnes) {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (int round = 0; round < 200; ++round) {
      constexpr int kHalf = 5;
      std::atomic<int> first_done{0}, waited_out{0};
      parallel_tasks(2 * kHalf, [&](int t) {
        if (t < kHalf) {
          first_done.fetch_add(1);
          return;
        }
        const auto start = std::chrono::steady_clock::now();
        while (first_done.load() < kHalf) {
          if (std::chrono::steady_clock::now() - start >
              std::chrono::seconds(10)) {
            waited_out.fetch_add(1);
            return;
          }
          std::this_thread::yield();
        }
      });
      ASSERT_EQ(waited_out.load(), 0) << threads << " threads, round " << round;
      ASSERT_EQ(first_done.load(), kHalf);
    }
  }
}

TEST_F(ThreadPoolTest, RejectsThreadCountsBelowOne) {
  for (int n : {0, -1}) {
    try {
      set_num_threads(n);
      FAIL() << "set_num_threads(" << n << ") did not throw";
    } catch (const ValueError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("set_num_threads"), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::to_string(n)), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace nascent::cpu
