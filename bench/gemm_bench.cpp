// fp32 GEMM throughput: nascent's packed GEMM against OpenBLAS and oneDNN on
// square row-major problems, at 1 and 2 threads, in one process.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./build/bench/bench/gemm_bench
//   ./build/bench/bench/gemm_bench 512 2048   # other sizes
//   ./build/bench/bench/gemm_bench --cpu-time # on a shared, busy machine
//
// Each library runs its repetitions in blocks, with a pause before the next
// block so that the previous library's spinning threads (OpenBLAS, OpenMP,
// nascent's pool) have gone to sleep and do not steal the cores. The blocks
// of the three libraries alternate over several rounds, so that each sees
// the same share of whatever else the machine is doing. GFLOP/s is from
// the best repetition; the last column is the ratio of medians. The
// results are checked against OpenBLAS's.
//
// --cpu-time divides by the CPU time of the process instead of wall time,
// which other processes on a busy machine do not inflate. Use it at one
// thread only: the kernel adds a running thread's time to the process's at
// scheduler ticks, so short multithreaded runs read too little.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include <cblas.h>
#include <omp.h>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>

#include "nascent/backends/cpu/gemm/gemm.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace {

bool g_cpu_time = false;

double now_seconds() {
  timespec t;
  clock_gettime(g_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Problem {
  int64_t n;
  std::vector<float> a, b, c;
};

// Times of the repetitions of one library at one size and thread count.
struct Samples {
  std::vector<double> seconds;
  double best() const {
    return *std::min_element(seconds.begin(), seconds.end());
  }
  double median() const {
    std::vector<double> s = seconds;
    std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
    return s[s.size() / 2];
  }
};

// Runs fn `reps` times into `out`, after an untimed warm-up run if asked.
void time_block(int reps, bool warm_up, Samples& out,
                const std::function<void()>& fn) {
  if (warm_up) fn();
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_seconds();
    fn();
    out.seconds.push_back(now_seconds() - t0);
  }
}

void pause_for_spinners() {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

double max_rel_diff(const std::vector<float>& x, const std::vector<float>& y) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::fabs(double(x[i]) - double(y[i])));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  return worst / std::max(scale, 1e-30);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--cpu-time") {
      g_cpu_time = true;
    } else {
      sizes.push_back(std::atoll(argv[i]));
    }
  }
  if (sizes.empty()) sizes = {256, 1024, 4096};

  std::printf("OpenBLAS: %s (core %s)\n", openblas_get_config(),
              openblas_get_corename());
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN: %d.%d.%d (%s)\n", v->major, v->minor, v->patch,
              v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
  std::printf("timing: %s\n", g_cpu_time ? "process CPU time" : "wall time");
  std::printf("\n%6s %7s %10s %10s %10s %8s %8s\n", "n", "threads", "nascent",
              "OpenBLAS", "oneDNN", "ratio", "ratio");
  std::printf("%6s %7s %10s %10s %10s %8s %8s\n", "", "", "GFLOP/s", "GFLOP/s",
              "GFLOP/s", "/best", "medians");

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t n : sizes) {
    Problem p{n, {}, {}, {}};
    size_t nn = size_t(n * n);
    p.a.resize(nn);
    p.b.resize(nn);
    for (float& x : p.a) x = dist(rng);
    for (float& x : p.b) x = dist(rng);
    const double flops = 2.0 * double(n) * double(n) * double(n);
    // About 0.5 s of work per library at 100 GFLOP/s, 5 to 50 runs, in up
    // to 5 rounds; warm-up runs where one run is short.
    const int reps = int(std::clamp(5e10 / flops, 5.0, 50.0));
    const int rounds = std::min(reps, 5);
    const bool warm_up = flops < 1e10;

    for (int threads : {1, 2}) {
      std::vector<float> c_nascent(nn), c_blas(nn), c_dnnl(nn);
      nascent::cpu::GemmArgs g;
      g.m = g.n = g.k = n;
      g.rsa = g.rsb = g.ldc = n;
      g.csa = g.csb = 1;
      Samples s_nascent, s_blas, s_dnnl;
      for (int round = 0; round < rounds; ++round) {
        const int block = (reps + round) / rounds;  // Sums to reps.
        nascent::cpu::set_num_threads(threads);
        time_block(block, warm_up, s_nascent, [&] {
          nascent::cpu::gemm_f32(g, p.a.data(), p.b.data(), c_nascent.data());
        });
        nascent::cpu::set_num_threads(1);  // Park the workers.
        pause_for_spinners();

        openblas_set_num_threads(threads);
        time_block(block, warm_up, s_blas, [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n),
                      int(n), 1.0f, p.a.data(), int(n), p.b.data(), int(n),
                      0.0f, c_blas.data(), int(n));
        });
        pause_for_spinners();

        omp_set_num_threads(threads);
        time_block(block, warm_up, s_dnnl, [&] {
          dnnl_sgemm('N', 'N', n, n, n, 1.0f, p.a.data(), n, p.b.data(), n,
                     0.0f, c_dnnl.data(), n);
        });
        pause_for_spinners();
      }
      const double t_nascent = s_nascent.best(), t_blas = s_blas.best();
      const double t_dnnl = s_dnnl.best();
      const double median_ratio =
          std::min(s_blas.median(), s_dnnl.median()) / s_nascent.median();

      double gf_nascent = flops / t_nascent * 1e-9;
      double gf_blas = flops / t_blas * 1e-9;
      double gf_dnnl = flops / t_dnnl * 1e-9;
      std::printf("%6lld %7d %10.1f %10.1f %10.1f %8.2f %8.2f\n", (long long)n,
                  threads, gf_nascent, gf_blas, gf_dnnl,
                  gf_nascent / std::max(gf_blas, gf_dnnl), median_ratio);
      std::fflush(stdout);
      double err = std::max(max_rel_diff(c_nascent, c_blas),
                            max_rel_diff(c_dnnl, c_blas));
      if (err > 1e-4) {
        std::printf("  results differ from OpenBLAS by %.2e (relative)\n", err);
      }
    }
  }
  return 0;
}
