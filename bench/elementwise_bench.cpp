// Element-wise kernels against the memory bandwidth of a plain copy,
// measured in the same run.
//
// For each size (2^24 and 2^26 f32 elements) and thread count (1, 2) it
// times two copies of 4 bytes per element (read once, write once) on the
// same thread pool: memcpy, and abs of non-negative data, a copy through the
// unary kernels' own loop with its streaming stores for large outputs
// (glibc's memcpy streams only past a size between 2^24 and 2^26 floats
// here, so memcpy alone flatters the kernels at 2^24). The faster copy is
// the reference. Then add, mul, add of a scalar,
// exp, the transcendental unary ops and where through the CPU backend, all
// writing preallocated outputs that were written before (no page faults on
// either side), and prints GB/s (bytes read + written) and the ratio to the
// reference copy. A second column times the
// op as a user calls it (a fresh output each time: page faults included).
// Last, the thread-pool wake-up cost and the size from which two threads
// beat one.
//
//   elementwise_bench [--quick] [--cache] [--cpu-time]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"

namespace {

using namespace nascent;
using Clock = std::chrono::steady_clock;

// With --cpu-time, a run's time is the process's CPU time divided by the
// thread count: on a machine shared with other jobs this leaves out the
// time our threads wait for a core (not the memory traffic of the others).
bool g_cpu_time = false;
int g_threads = 1;

double now_seconds() {
  if (g_cpu_time) return double(std::clock()) / CLOCKS_PER_SEC / g_threads;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Median seconds of `reps` runs after one warm-up run.
double time_median(int reps, const std::function<void()>& fn) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_seconds();
    fn();
    t.push_back(now_seconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Case {
  std::string name;
  double bytes_per_element;      // Read + written.
  std::function<void()> kernel;  // Backend call into a preallocated output.
  std::function<void()> op;      // The user-facing op (allocates).
};

void run_size(cpu::Backend& cpu, int64_t n, int reps) {
  Tensor a = rand({n}, cpu, 1);
  Tensor b = rand({n}, cpu, 2);
  Tensor x = randn({n}, cpu, 3);
  Tensor cond = gt(rand({n}, cpu, 4), 0.5);
  Tensor two = full({}, 2.0, cpu);
  Tensor out = zeros({n}, cpu);
  Tensor out2 = zeros({n}, cpu);
  const float* src = cpu::data_ptr<float>(a);
  float* dst = cpu::data_ptr<float>(out2);
  auto bv = [&](const Tensor& t) { return t.expand({n}); };
  std::vector<Case> cases = {
      {"copy (memcpy)", 8,
       [&] {
         cpu::parallel_for(n, 1 << 16, [&](int64_t s, int64_t e) {
           std::memcpy(dst + s, src + s, size_t(e - s) * 4);
         });
       },
       [&] { a.clone(); }},
      // abs of a (in [0, 1)) is a copy through the unary kernels' own loop.
      {"copy (kernel)", 8, [&] { cpu.unary(UnaryOp::abs, a, {}, out); },
       [&] { abs(a); }},
      {"add", 12, [&] { cpu.binary(BinaryOp::add, a, b, out); },
       [&] { add(a, b); }},
      {"mul", 12, [&] { cpu.binary(BinaryOp::mul, a, b, out); },
       [&] { mul(a, b); }},
      {"add scalar", 8, [&] { cpu.binary(BinaryOp::add, a, bv(two), out); },
       [&] { add(a, 2.0); }},
      {"exp", 8, [&] { cpu.unary(UnaryOp::exp, x, {}, out); }, [&] { exp(x); }},
      {"gelu (erf)", 8, [&] { cpu.unary(UnaryOp::gelu, x, {}, out); },
       [&] { gelu(x); }},
      {"gelu (tanh)", 8, [&] { cpu.unary(UnaryOp::gelu_tanh, x, {}, out); },
       [&] { gelu_tanh(x); }},
      {"sigmoid", 8, [&] { cpu.unary(UnaryOp::sigmoid, x, {}, out); },
       [&] { sigmoid(x); }},
      {"silu", 8, [&] { cpu.unary(UnaryOp::silu, x, {}, out); },
       [&] { silu(x); }},
      {"tanh", 8, [&] { cpu.unary(UnaryOp::tanh, x, {}, out); },
       [&] { tanh(x); }},
      {"erf", 8, [&] { cpu.unary(UnaryOp::erf, x, {}, out); }, [&] { erf(x); }},
      {"where", 13, [&] { cpu.where(cond, a, b, out); },
       [&] { where(cond, a, b); }},
  };
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    g_threads = threads;
    // Both copies run first; the faster one is the reference.
    std::vector<double> t(cases.size()), t_op(cases.size());
    for (size_t k = 0; k < cases.size(); ++k) {
      t[k] = time_median(reps, cases[k].kernel);
      t_op[k] = time_median(reps, cases[k].op);
    }
    const double copy_gbs = 8 * double(n) / std::min(t[0], t[1]) / 1e9;
    fmt::print("\nf32 x 2^{} ({} MB per operand), {} thread{}\n",
               int(std::log2(double(n))), n * 4 >> 20, threads,
               threads > 1 ? "s" : "");
    fmt::print("{:<15} {:>9} {:>8} {:>8} {:>12} {:>8}\n", "op", "ms", "GB/s",
               "x copy", "op() ms", "GB/s");
    for (size_t k = 0; k < cases.size(); ++k) {
      const double bytes = cases[k].bytes_per_element * double(n);
      fmt::print("{:<15} {:>9.2f} {:>8.1f} {:>8.2f} {:>12.2f} {:>8.1f}\n",
                 cases[k].name, t[k] * 1e3, bytes / t[k] / 1e9,
                 bytes / t[k] / 1e9 / copy_gbs, t_op[k] * 1e3,
                 bytes / t_op[k] / 1e9);
    }
  }
}

// Compute cost of each kernel on data that stays in L1/L2 (one thread):
// what a memory-bound op must stay under, and what a compute-bound one costs.
void run_in_cache(cpu::Backend& cpu) {
  cpu::set_num_threads(1);
  g_threads = 1;
  const int64_t n = 8192;
  Tensor x = randn({n}, cpu, 3), y = rand({n}, cpu, 4);
  Tensor out = zeros({n}, cpu);
  Tensor out_bool = zeros({n}, cpu, DType::boolean);
  fmt::print("\nin-cache cost, f32, {} elements, 1 thread (ns per element)\n",
             n);
  int column = 0;
  auto report = [&](const char* what, double t) {
    fmt::print("{:<12} {:>6.3f}{}", what, t * 1e9 / double(n),
               ++column % 4 == 0 ? "\n" : "   ");
  };
  for (const OpInfo& info : op_table()) {
    if (info.family == OpFamily::Unary) {
      UnaryOp op = UnaryOp(int(info.op) - int(Op::neg));
      if (op == UnaryOp::logical_not) continue;
      UnaryParams p{op == UnaryOp::clamp ? -1.0 : 2.0, 1.0};
      report(info.name, time_median(31, [&] {
                          for (int r = 0; r < 64; ++r) cpu.unary(op, x, p, out);
                        }) / 64);
    } else if (info.family == OpFamily::Binary) {
      BinaryOp op = BinaryOp(int(info.op) - int(Op::add));
      if (op >= BinaryOp::logical_and) continue;
      Tensor& o = op >= BinaryOp::eq ? out_bool : out;
      report(info.name, time_median(31, [&] {
                          for (int r = 0; r < 64; ++r) cpu.binary(op, x, y, o);
                        }) / 64);
    }
  }
  fmt::print("\n");
}

// Wake-up cost of the pool, and the speed-up of two threads over one for a
// cheap op (add) and a costly one (gelu) by size, splitting by hand.
void run_threshold(cpu::Backend& cpu) {
  cpu::set_num_threads(2);
  g_cpu_time = false;  // Waiting for a worker is what this measures.
  // Both tasks wait until both have started: the time for a worker to wake.
  std::atomic<int> started{0};
  double wake = time_median(2001, [&] {
    started = 0;
    cpu::parallel_tasks(2, [&](int) {
      ++started;
      auto t0 = Clock::now();
      while (started.load() < 2 &&
             Clock::now() - t0 < std::chrono::milliseconds(5)) {
      }
    });
  });
  fmt::print("\nthread pool: a job of 2 tasks that meet takes {:.2f} us\n",
             wake * 1e6);
  fmt::print("{:<8} {:>8} {:>12} {:>12} {:>10}\n", "op", "n", "1 thread us",
             "2 threads us", "speed-up");
  for (const char* op : {"add", "gelu"}) {
    for (int64_t n = 1024; n <= (1 << 18); n *= 2) {
      Tensor a = rand({n}, cpu, 1), b = rand({n}, cpu, 2);
      Tensor out = zeros({n}, cpu);
      const bool is_add = std::string(op) == "add";
      auto part = [&](int64_t s, int64_t e) {
        Tensor as = a.narrow(0, s, e - s), bs = b.narrow(0, s, e - s);
        Tensor os = out.narrow(0, s, e - s);
        if (is_add) {
          cpu.binary(BinaryOp::add, as, bs, os);
        } else {
          cpu.unary(UnaryOp::gelu, as, {}, os);
        }
      };
      const int reps = int(std::max<int64_t>(21, (1 << 22) / n));
      double t1 = time_median(reps, [&] { part(0, n); });
      double t2 = time_median(reps, [&] {
        cpu::parallel_tasks(
            2, [&](int task) { part(task * n / 2, (task + 1) * n / 2); });
      });
      fmt::print("{:<8} {:>8} {:>12.2f} {:>12.2f} {:>10.2f}\n", op, n, t1 * 1e6,
                 t2 * 1e6, t1 / t2);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, only_cache = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    quick |= arg == "--quick";
    only_cache |= arg == "--cache";
    g_cpu_time |= arg == "--cpu-time";
  }
  cpu::Backend cpu;
  fmt::print(
      "nascent element-wise bench: GB/s = (bytes read + written) / time, "
      "median of runs, {} time\n",
      g_cpu_time ? "CPU (process CPU time / threads)" : "wall");
  if (!only_cache) {
    run_size(cpu, int64_t(1) << 24, quick ? 3 : 11);
    if (!quick) run_size(cpu, int64_t(1) << 26, 5);
  }
  run_in_cache(cpu);
  if (!only_cache) run_threshold(cpu);
  return 0;
}
