// Reference-speed GEMM: a correct, cache-aware loop nest. The packed SIMD
// micro-kernels replace the f32 path.
#include "nascent/backends/cpu/gemm.h"

#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

template <class T>
void gemm_naive(const GemmArgs& g, const T* a, const T* b, T* c) {
  parallel_for(g.m, 4, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T* crow = c + i * g.ldc;
      if (!g.accumulate) {
        for (int64_t j = 0; j < g.n; ++j) crow[j] = T(0);
      }
      for (int64_t p = 0; p < g.k; ++p) {
        T av = a[i * g.rsa + p * g.csa];
        const T* brow = b + p * g.rsb;
        for (int64_t j = 0; j < g.n; ++j) crow[j] += av * brow[j * g.csb];
      }
    }
  });
}

}  // namespace

void gemm_f32(const GemmArgs& g, const float* a, const float* b, float* c) {
  gemm_naive(g, a, b, c);
}

void gemm_f64(const GemmArgs& g, const double* a, const double* b,
              double* c) {
  gemm_naive(g, a, b, c);
}

}  // namespace nascent::cpu
