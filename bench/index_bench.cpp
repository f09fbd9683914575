// Times the indexing ops on shapes of real models (embedding lookup of a
// LLaMA-like vocabulary, gather and scatter_add of a classifier head).
// Prints "name best_us bytes_moved" lines; bench/index_vs_torch.py runs
// PyTorch on the same shapes and prints the ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace {

double best_us(const std::function<void()>& fn, int reps) {
  fn();  // Warm up caches and the thread pool.
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    auto end = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  std::sort(t.begin(), t.end());
  return t.front();  // Best of reps: the machine may be shared.
}

}  // namespace

int main() {
  using namespace nascent;
  cpu::Backend b;
  Generator gen(1);
  auto report = [](const char* name, double us, double bytes) {
    std::printf("%s %.1f %.0f\n", name, us, bytes);
  };
  {
    // Embedding: 32000 x 1024 f32 table, 4096 token ids.
    Tensor w = uniform({32000, 1024}, -1, 1, b, gen);
    Tensor ids = uniform({4096}, 0, 32000, b, gen, DType::f64).cast(DType::i64);
    double us = best_us([&] { embedding(w, ids); }, 50);
    report("embedding_f32_32000x1024_ids4096", us, 2.0 * 4096 * 1024 * 4);
  }
  {
    // gather along the last axis: [4096, 1024] f32, index [4096, 256].
    Tensor x = uniform({4096, 1024}, -1, 1, b, gen);
    Tensor idx =
        uniform({4096, 256}, 0, 1024, b, gen, DType::f64).cast(DType::i64);
    double us = best_us([&] { gather(x, 1, idx); }, 50);
    report("gather_f32_4096x1024_axis1_k256", us, 4096.0 * 256 * (4 + 8 + 4));
  }
  {
    // scatter_add along axis 0: 8192 rows of 512 into 1024 rows.
    Tensor x = zeros({1024, 512}, b);
    Tensor src = uniform({8192, 512}, -1, 1, b, gen);
    Tensor idx = uniform({8192, 1}, 0, 1024, b, gen, DType::f64)
                     .cast(DType::i64)
                     .expand({8192, 512});
    double us = best_us([&] { scatter_add(x, 0, idx, src); }, 30);
    report("scatter_add_f32_1024x512_axis0_8192", us,
           8192.0 * 512 * (4 + 4 + 8));
  }
  {
    // index_select along the last axis (the strided path): [2048, 1024].
    Tensor x = uniform({2048, 1024}, -1, 1, b, gen);
    Tensor idx = uniform({512}, 0, 1024, b, gen, DType::f64).cast(DType::i64);
    double us = best_us([&] { index_select(x, 1, idx); }, 50);
    report("index_select_f32_2048x1024_axis1_k512", us, 2.0 * 2048 * 512 * 4);
  }
  return 0;
}
