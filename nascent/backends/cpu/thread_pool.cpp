#include "nascent/backends/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "nascent/core/error.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace nascent::cpu {

namespace {

thread_local bool t_in_worker = false;

// Emscripten without -pthread links std::thread but cannot start one (the
// constructor throws), so there the pool keeps no workers and every job runs
// on the calling thread.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
constexpr bool kCanStartThreads = false;
#else
constexpr bool kCanStartThreads = true;
#endif

// Tells the CPU that this is a spin-wait: a sibling hyperthread gets the
// core's resources, and a hypervisor (KVM's pause-loop exiting) may run
// another of the VM's vCPUs, say the one that the spinner waits for.
inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// The CPU the calling thread runs on, or -1 where that is unknown.
int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// Moves the calling thread off `cpu`, then lets it run anywhere it could
// before. Linux puts a new or woken worker on the CPU of the thread that
// started or woke it and here left both sharing it for milliseconds while
// the other CPU idled (whole 256^3 GEMMs ran at one thread's speed); a
// worker that finds itself on its caller's CPU pays two system calls.
void move_off(int cpu) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (cpu < 0 || cpu >= CPU_SETSIZE ||
      sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return;
  }
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0) return;
  if (sched_setaffinity(0, sizeof(others), &others) == 0) {
    sched_setaffinity(0, sizeof(allowed), &allowed);
  }
#else
  (void)cpu;
#endif
}

// How long a thread busy-waits for the event it expects (the next job, the
// end of the current one) before it sleeps on a condition variable:
// NASCENT_SPIN_US microseconds, read once. Waking a sleeping thread costs
// 10-50 us in a VM, and a vCPU left idle can take milliseconds to get its
// core back from the host, as much as a whole small GEMM; jobs often follow
// each other closely (a model's layers, a GEMM's repetitions). OpenMP and
// OpenBLAS spin for milliseconds too. The wait is bounded: an idle process
// stops burning CPU after this long, and a pool of one thread never spins.
constexpr long kDefaultSpinUs = 2000;
// The first part of a wait polls flat out; after it, each check first
// yields the core, so that a waiter sharing one with the thread it waits
// for (the host or the kernel put both there) lets that thread run.
constexpr auto kPollOnly = std::chrono::microseconds(50);

std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds us = [] {
    if (const char* env = std::getenv("NASCENT_SPIN_US")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && v >= 0) {
        return std::chrono::microseconds(v);
      }
    }
    return std::chrono::microseconds(kDefaultSpinUs);
  }();
  return us;
}

// True once done() is, or false when spin_time() has passed first.
template <class Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto limit = spin_time();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_pause();
    if (i % 64 == 0) {
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > limit) return false;
      if (waited > kPollOnly) std::this_thread::yield();
    }
  }
}

// Workers sleep on a condition variable between jobs; a job is a task count
// and a function, and tasks are claimed from an atomic counter so uneven
// tasks balance themselves.
class Pool {
 public:
  Pool() { resize(initial_threads()); }
  ~Pool() { stop_workers(); }

  // Lock-free: a job's tasks ask for it while run() holds run_mutex_.
  int size() const { return size_.load(); }

  void resize(int n) {
    std::lock_guard<std::mutex> lock(run_mutex_);
    stop_workers();
    stopping_ = false;
    caller_cpu_ = current_cpu();
    if (kCanStartThreads) {
      for (int i = 1; i < n; ++i) workers_.emplace_back([this] { work(); });
    }
    // Returns once every worker runs: a new thread can wait milliseconds
    // for a core, and the first jobs would otherwise run on the caller
    // alone.
    std::unique_lock<std::mutex> started_lock(mutex_);
    started_cv_.wait(started_lock,
                     [&] { return started_ == int(workers_.size()); });
    size_.store(int(workers_.size()) + 1);
  }

  void run(int tasks, const std::function<void(int)>& fn) {
    if (tasks <= 0) return;
    if (tasks == 1 || t_in_worker) {
      for (int t = 0; t < tasks; ++t) fn(t);
      return;
    }
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    if (workers_.empty()) {
      for (int t = 0; t < tasks; ++t) fn(t);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      tasks_ = tasks;
      caller_cpu_ = current_cpu();
      next_.store(0);
      done_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    t_in_worker = true;
    int finished = claim_and_run(fn, tasks);
    t_in_worker = false;
    done_ += finished;
    spin_until([&] { return done_.load() == tasks && active_.load() == 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    // Wait for the tasks and for every worker that joined: a worker still
    // holding fn_ must not see the next job's counter.
    idle_.wait(lock, [&] { return done_ == tasks_ && active_ == 0; });
    fn_ = nullptr;
    // A task that threw (say, an allocation failing) surfaces here, in the
    // caller, instead of terminating the process from a worker.
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  static int initial_threads() {
    if (const char* env = std::getenv("NASCENT_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return std::max(1u, std::thread::hardware_concurrency());
  }

  // Runs tasks until none is left; counts them, thrown or not, so the job
  // still completes, and keeps the first exception for the caller.
  int claim_and_run(const std::function<void(int)>& fn, int tasks) {
    int count = 0;
    for (int t; (t = next_.fetch_add(1)) < tasks; ++count) {
      try {
        fn(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
    return count;
  }

  void work() {
    t_in_worker = true;
    uint64_t seen = 0;
    leave_caller_cpu();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++started_;
    }
    started_cv_.notify_all();
    for (;;) {
      const std::function<void(int)>* fn;
      int tasks;
      spin_until(
          [&] { return stopping_.load() || generation_.load() != seen; });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (fn_ == nullptr) continue;  // Woke after that job had ended.
        fn = fn_;
        tasks = tasks_;
        ++active_;
      }
      leave_caller_cpu();
      int finished = claim_and_run(*fn, tasks);
      std::lock_guard<std::mutex> lock(mutex_);
      done_ += finished;
      --active_;
      if (done_ == tasks_ && active_ == 0) idle_.notify_one();
    }
  }

  void leave_caller_cpu() {
    const int cpu = caller_cpu_.load();
    if (cpu >= 0 && current_cpu() == cpu) move_off(cpu);
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
    started_ = 0;
  }

  std::mutex run_mutex_;  // One job at a time; callers queue here.
  std::mutex mutex_;
  std::condition_variable wake_, idle_, started_cv_;
  int started_ = 0;  // Workers that have begun to run.
  // The CPU of the thread that last started workers or posted a job.
  std::atomic<int> caller_cpu_{-1};
  std::vector<std::thread> workers_;
  const std::function<void(int)>* fn_ = nullptr;
  int tasks_ = 0;
  // Written under mutex_, read without it while spinning.
  std::atomic<int> done_{0};
  std::atomic<int> active_{0};  // Workers inside the current job.
  std::atomic<int> next_{0};
  std::atomic<int> size_{1};
  std::exception_ptr error_;  // First exception of the current job.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

int num_threads() {
  return t_in_worker ? 1 : pool().size();
}

void set_num_threads(int n) {
  if (n < 1) {
    throw ValueError("set_num_threads: need at least one thread, got " +
                     std::to_string(n));
  }
  pool().resize(n);
}

void parallel_tasks(int tasks, const std::function<void(int)>& fn) {
  pool().run(tasks, fn);
}

void parallel_for(int64_t n, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int threads = t_in_worker ? 1 : num_threads();
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  pool().run(int(chunks), [&](int c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace nascent::cpu
