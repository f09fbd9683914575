// Quantized products on the CPU (qmatmul), against peers run in the same
// process:
// - mat-vec (one x row, generation): GB/s of weights streamed, against a
//   memory copy (memcpy of a buffer as large as the weights, GB/s counting
//   its reads and writes) at the same thread count. Generation is memory
//   bound, so the ratio says how close to the machine's bandwidth it runs.
// - mat-mat (512 rows of x, a prompt, or --rows M,...: a batch of decoding
//   sequences is 2-16 rows): GFLOP/s (2 M N K) against nascent's
//   f32 GEMM (matmul of the same shapes with f32 weights).
// - both against llama.cpp's kernels (ggml's mul_mat from the
//   llama-cpp-python wheel in build/venv, bench/ggml_peer.h) on the same
//   weight bytes and thread count, where CMake found that wheel (else nan).
//
//   ./build/bench/bench/quant_bench            # 1 and 2 threads
//   ./build/bench/bench/quant_bench 2          # 2 threads only
//   ./build/bench/bench/quant_bench --cpu-time # 1 thread, CPU time
//   ./build/bench/bench/quant_bench --mat-mat  # only the M = 512 products
//   ./build/bench/bench/quant_bench --mat-mat --rows 1,2,4,8  # small M
//   ./build/bench/bench/quant_bench --portable # Highway's SSE4 kernels, not
//                                              # the AVX2 ones
//   ./build/bench/bench/quant_bench --no-vnni  # AVX-512 without VNNI, as a
//                                              # machine that lacks it runs
//
// The weights of each mat-vec are several copies used in turn, 128 MiB in
// all, so that they come from memory and not from the 32 MiB L3; the
// 256 x 4096 rows stay in the caches instead (the kernels' compute rate). Times
// are the best of the repetitions (the machine is shared; medians are printed
// too). --cpu-time divides by the process's CPU time instead of wall time,
// at one thread: the kernels' own speed on a machine busy with other jobs
// (memory bandwidth is still shared with them).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <hwy/targets.h>

#ifdef NASCENT_GGML_PEER
#include "ggml_peer.h"
#endif
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"
#include "nascent/quant/codec.h"

namespace {

using nascent::DType;
using nascent::QuantType;
using nascent::Tensor;

bool g_cpu_time = false;

double now() {
  timespec t;
  clock_gettime(g_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Timing {
  double best = 1e30, median = 0;
};

Timing time_reps(int reps, const std::function<void(int)>& fn) {
  fn(0);  // Warm-up.
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    fn(r);
    t.push_back(now() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

// Weights [n, k] of `type`: 64 rows quantized from normal values, repeated
// (the kernels' speed does not depend on the values).
std::vector<uint8_t> make_weights(QuantType type, int64_t n, int64_t k) {
  const size_t rb = nascent::row_bytes(type, k);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(size_t(64 * k));
  for (float& v : w) v = normal(rng);
  std::vector<uint8_t> rows(64 * rb);
  nascent::quant::quantize_row(type, w.data(), rows.data(), 64 * k);
  std::vector<uint8_t> out(size_t(n) * rb);
  for (int64_t j = 0; j < n; ++j) {
    std::memcpy(out.data() + size_t(j) * rb, rows.data() + size_t(j % 64) * rb,
                rb);
  }
  return out;
}

// llama.cpp's mul_mat (ggml) on the same weights as a function of the rep
// (copy r % copies), or an empty function where the peer is not built in.
std::function<void(int)> make_peer(QuantType type, const uint8_t* w, int64_t n,
                                   int64_t k, int64_t m, int copies,
                                   int threads) {
#ifdef NASCENT_GGML_PEER
  auto g = std::make_shared<nascent::bench::GgmlMatmul>(
      nascent::info(type).ggml_type, w, n, k,
      int64_t(nascent::row_bytes(type, k)), m, copies, threads);
  return [g, copies](int r) { g->run(r % copies); };
#else
  (void)type, (void)w, (void)n, (void)k, (void)m, (void)copies, (void)threads;
  return {};
#endif
}

// Times a and b (if not empty) in alternating runs of 5 reps, each run
// after an untimed call, so that both see the same share of a busy machine
// and neither is timed while the other's idle pool threads still spin (a
// worker that just finished keeps a core busy for a while, in both pools).
// b's timing is NaN when b is empty.
std::pair<Timing, Timing> time_pair(int reps, const std::function<void(int)>& a,
                                    const std::function<void(int)>& b) {
  constexpr int kRun = 5;
  std::vector<double> ta, tb;
  const auto run = [&](const std::function<void(int)>& f, int r0,
                       std::vector<double>& t) {
    f(r0);
    for (int r = r0; r < std::min(reps, r0 + kRun); ++r) {
      const double t0 = now();
      f(r);
      t.push_back(now() - t0);
    }
  };
  for (int r0 = 0; r0 < reps; r0 += kRun) {
    run(a, r0, ta);
    if (b) run(b, r0, tb);
  }
  const auto summary = [](std::vector<double>& t) {
    if (t.empty()) return Timing{std::nan(""), std::nan("")};
    std::sort(t.begin(), t.end());
    return Timing{t.front(), t[t.size() / 2]};
  };
  return {summary(ta), summary(tb)};
}

// memcpy of `bytes`, split over the threads; GB/s of reads plus writes.
double copy_gbps(size_t bytes, int reps) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  const int64_t chunks = 64;
  const Timing t = time_reps(reps, [&](int) {
    nascent::cpu::parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      const size_t b0 = bytes * size_t(c0) / chunks;
      const size_t b1 = bytes * size_t(c1) / chunks;
      std::memcpy(dst.data() + b0, src.data() + b0, b1 - b0);
    });
  });
  return 2.0 * double(bytes) / t.best / 1e9;
}

void matvec(nascent::cpu::Backend& cpu, QuantType type, int64_t n, int64_t k,
            int threads, double copy) {
  const std::vector<uint8_t> w = make_weights(type, n, k);
  const int64_t rb = int64_t(nascent::row_bytes(type, k));
  // Small weights stay in the caches (one copy): the kernel's compute rate.
  const bool in_cache = w.size() < (size_t(4) << 20);
  const int copies =
      in_cache ? 1 : int(std::max<size_t>(1, (size_t(128) << 20) / w.size()));
  std::vector<Tensor> ws;
  for (int c = 0; c < copies; ++c) {
    ws.push_back(nascent::from_data(w.data(), {n, rb}, DType::u8, cpu));
  }
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  std::vector<float> xv(static_cast<size_t>(k));
  for (float& v : xv) v = normal(rng);
  const Tensor x = nascent::from_vector(xv, {1, k}, cpu);
  const auto [t, tp] = time_pair(
      std::max(20, 2 * copies),
      [&](int r) { nascent::qmatmul(x, ws[size_t(r % copies)], type); },
      make_peer(type, w.data(), n, k, 1, copies, threads));
  const double gbps = double(w.size()) / t.best / 1e9;
  const double peer_gbps = double(w.size()) / tp.best / 1e9;
  fmt::print(
      "| mat-vec | {}x{} | {} | {} | {:.3f} ({:.3f}) | {:.1f} | {:.1f} | "
      "{:.1f} | {:.2f} | {:.2f} |\n",
      n, k, nascent::name(type), threads, t.best * 1e3, t.median * 1e3, gbps,
      peer_gbps, copy, gbps / copy, gbps / peer_gbps);
  std::fflush(stdout);
}

void matmat(nascent::cpu::Backend& cpu, QuantType type, int64_t m, int64_t n,
            int64_t k, int threads) {
  const std::vector<uint8_t> w = make_weights(type, n, k);
  const int64_t rb = int64_t(nascent::row_bytes(type, k));
  const Tensor wq = nascent::from_data(w.data(), {n, rb}, DType::u8, cpu);
  const Tensor wf = nascent::dequantize(wq, type);  // [n, k] f32
  nascent::Generator gen(3);
  const Tensor x = nascent::normal({m, k}, 0.0, 1.0, cpu, gen);
  // Each pair timed in alternating runs (time_pair).
  const auto qm = [&](int) { nascent::qmatmul(x, wq, type); };
  const auto [tq, tf] =
      time_pair(7, qm, [&](int) { nascent::matmul(x, wf.transpose()); });
  const auto [tq2, tp] =
      time_pair(7, qm, make_peer(type, w.data(), n, k, m, 1, threads));
  const double best = std::min(tq.best, tq2.best);
  const double flop = 2.0 * double(m) * double(n) * double(k);
  fmt::print(
      "| mat-mat M={} | {}x{} | {} | {} | {:.1f} ({:.1f}) | {:.1f} | "
      "{:.1f} | {:.1f} | {:.2f} | {:.2f} |\n",
      m, n, k, nascent::name(type), threads, best * 1e3, tq.median * 1e3,
      flop / best / 1e9, flop / tp.best / 1e9, flop / tf.best / 1e9,
      tf.best / tq.best, tp.best / tq2.best);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  bool matvecs = true;
  std::vector<int64_t> mat_rows = {512};
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--cpu-time") {
      g_cpu_time = true;
      thread_counts = {1};
    } else if (arg == "--mat-mat") {
      matvecs = false;
    } else if (arg == "--portable") {
      // The portable Highway kernels, as a machine without AVX2 runs them.
      hwy::SetSupportedTargetsForTest(HWY_SSE4);
    } else if (arg == "--no-vnni") {
      nascent::cpu::set_vnni_for_test(false);
    } else if (arg == "--rows" && a + 1 < argc) {
      // The mat-mat section's rows of x: a batch of decoding sequences
      // (2-8) as well as a prompt (512).
      mat_rows.clear();
      for (std::string_view v = argv[++a]; !v.empty();) {
        const size_t comma = std::min(v.find(','), v.size());
        const int64_t m = std::atoll(std::string(v.substr(0, comma)).c_str());
        if (m <= 0) {
          fmt::print(stderr, "quant_bench: --rows takes positive counts\n");
          return 2;
        }
        mat_rows.push_back(m);
        v.remove_prefix(std::min(v.size(), comma + 1));
      }
    } else if (const int t = std::atoi(arg.c_str()); t > 0) {
      thread_counts = {t};
    } else {
      fmt::print(stderr,
                 "usage: quant_bench [THREADS] [--cpu-time] [--mat-mat] "
                 "[--portable] [--no-vnni] [--rows M,M,...]\n");
      return 2;
    }
  }
  nascent::cpu::Backend cpu;
  const QuantType types[] = {QuantType::q4_0, QuantType::q8_0, QuantType::q4_k,
                             QuantType::q6_k, QuantType::f16};
  const std::pair<int64_t, int64_t> shapes[] = {
      {4096, 4096}, {5632, 2048}, {256, 4096}};
  fmt::print(
      "| op | N x K | type | threads | ms best (median) | weights GB/s | "
      "llama.cpp GB/s | memcpy GB/s | vs memcpy | vs llama.cpp "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int threads : matvecs ? thread_counts : std::vector<int>{}) {
    nascent::cpu::set_num_threads(threads);
    const double copy = copy_gbps(size_t(256) << 20, 5);
    for (auto [n, k] : shapes) {
      for (QuantType type : types) matvec(cpu, type, n, k, threads, copy);
    }
  }
  fmt::print(
      "\n| op | N x K | type | threads | ms best (median) | GFLOP/s | "
      "llama.cpp GFLOP/s | f32 GEMM GFLOP/s | vs f32 GEMM | vs llama.cpp "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int threads : thread_counts) {
    nascent::cpu::set_num_threads(threads);
    for (int64_t m : mat_rows) {
      for (QuantType type : types) matmat(cpu, type, m, 2048, 2048, threads);
    }
  }
  return 0;
}
