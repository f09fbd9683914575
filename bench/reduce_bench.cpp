// Reductions, softmax and layer_norm on the CPU backend.
//
//   reduce_bench bandwidth   reductions of a 64M-element f32 tensor against
//                            the faster of a memcpy of the same bytes and
//                            the element-wise kernels' streaming copy, 1
//                            and 2 threads;
//                            a reduction's bandwidth counts the bytes it
//                            reads, the copy's the bytes it reads and
//                            writes (the memory traffic of each).
//   reduce_bench rows        softmax and layer_norm timings for
//                            bench/run_softmax_norm.sh (which adds PyTorch's).
//
// Times are the minimum over repeats after a warm-up: the machine is shared,
// and the minimum is the least disturbed run.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "nascent/nascent.h"

namespace {

using namespace nascent;

double seconds_min(int repeats, const std::function<void()>& fn) {
  fn();  // Warm-up: page faults, caches, thread start.
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

void bandwidth() {
  cpu::Backend& backend = static_cast<cpu::Backend&>(default_backend());
  const int64_t n = int64_t(64) << 20;
  const double bytes = double(n) * 4.0;
  Tensor x = rand({n}, backend, 1);
  // Written once, so no page faults, and aligned like x: memcpy into a
  // std::vector (a large malloc starts 16 bytes into a page) measured 7-8
  // GB/s on one thread here, against 15-19 into the backend's storage.
  Tensor out = zeros({n}, backend);
  float* dst = cpu::data_ptr<float>(out);
  const float* src = cpu::data_ptr<float>(x);
  fmt::print(
      "GB/s: a reduction counts the bytes it reads (n * 4), a copy the "
      "bytes it reads and writes (2 * n * 4); vs copy: GB/s over that of "
      "the faster copy (memcpy or kernel), timed alternately with the op\n");
  fmt::print("{:<28} {:>7} {:>10} {:>10} {:>8} {:>9}\n",
             "op (64M f32 = 256 MiB)", "threads", "ms", "GB/s", "vs copy",
             "copy GB/s");
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    // The peers: memcpy of the same bytes split over the same threads, and
    // abs of x (in [0, 1)), a copy through the element-wise kernels' loop
    // with streaming stores. The faster is the reference.
    auto run_memcpy = [&] {
      cpu::parallel_for(n, 1 << 20, [&](int64_t b, int64_t e) {
        std::memcpy(dst + b, src + b, size_t(e - b) * 4);
      });
    };
    auto run_kernel = [&] { backend.unary(UnaryOp::abs, x, {}, out); };
    const double t_memcpy = seconds_min(10, run_memcpy);
    const double t_kernel = seconds_min(10, run_kernel);
    const double copy_bw = 2 * bytes / std::min(t_memcpy, t_kernel) / 1e9;
    for (auto [label, t] :
         {std::pair<const char*, double>{"memcpy (256 MiB each way)", t_memcpy},
          {"copy kernel (abs)", t_kernel}}) {
      const double bw = 2 * bytes / t / 1e9;
      fmt::print("{:<28} {:>7} {:>10.2f} {:>10.1f} {:>7.2f}x {:>9.1f}\n", label,
                 threads, t * 1e3, bw, bw / copy_bw, copy_bw);
    }
    struct Op {
      const char* label;
      std::function<Tensor()> run;
      double bytes;
    };
    Tensor m = x.view({65536, 1024});
    const std::vector<Op> ops = {
        {"sum (all)", [&] { return sum(x); }, bytes},
        {"max (all)", [&] { return max(x); }, bytes},
        {"mean (all)", [&] { return mean(x); }, bytes},
        {"sum [65536,1024] axis 1", [&] { return sum(m, {1}); }, bytes},
        {"sum [65536,1024] axis 0", [&] { return sum(m, {0}); }, bytes},
        {"max [65536,1024] axis 0", [&] { return max(m, {0}); }, bytes},
        {"argmax [65536,1024] axis 1", [&] { return argmax(m, 1); }, bytes},
        {"argmax (all)", [&] { return argmax(x); }, bytes},
    };
    // Each op alternates with the two copies, so its ratio is to a copy
    // timed in the same seconds (the host's memory bandwidth drifts by
    // 10-30% over a run).
    for (const Op& op : ops) {
      double t = 1e30, tc = 1e30;
      for (int round = 0; round < 5; ++round) {
        tc = std::min(
            {tc, seconds_min(1, run_memcpy), seconds_min(1, run_kernel)});
        t = std::min(t, seconds_min(2, [&] { op.run(); }));
      }
      const double bw = op.bytes / t / 1e9, cbw = 2 * bytes / tc / 1e9;
      fmt::print("{:<28} {:>7} {:>10.2f} {:>10.1f} {:>7.2f}x {:>9.1f}\n",
                 op.label, threads, t * 1e3, bw, bw / cbw, cbw);
    }
  }
}

// One line per (op, shape, threads): "op rows cols threads ms".
void rows() {
  cpu::Backend& backend = static_cast<cpu::Backend&>(default_backend());
  // [128, 1024] stays in L2 (compute-bound); the others stream memory.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {128, 1024}, {4096, 1024}, {64, 32000}, {16384, 768}};
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    for (auto [r, c] : shapes) {
      Tensor x = randn({r, c}, backend, 3);
      Tensor w = randn({c}, backend, 4);
      Tensor b = randn({c}, backend, 5);
      const double ts = seconds_min(20, [&] { softmax(x, -1); });
      const double tl = seconds_min(20, [&] { log_softmax(x, -1); });
      const double tn = seconds_min(20, [&] { layer_norm(x, &w, &b); });
      const double tr = seconds_min(20, [&] { rms_norm(x, &w); });
      fmt::print("softmax {} {} {} {:.4f}\n", r, c, threads, ts * 1e3);
      fmt::print("log_softmax {} {} {} {:.4f}\n", r, c, threads, tl * 1e3);
      fmt::print("layer_norm {} {} {} {:.4f}\n", r, c, threads, tn * 1e3);
      fmt::print("rms_norm {} {} {} {:.4f}\n", r, c, threads, tr * 1e3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "bandwidth";
  if (mode == "bandwidth") {
    bandwidth();
  } else if (mode == "rows") {
    rows();
  } else {
    fmt::print(stderr, "usage: reduce_bench [bandwidth|rows]\n");
    return 2;
  }
  return 0;
}
