// Internals of the packed GEMM shared by gemm.cpp (threading, scratch) and
// gemm_kernel.cpp (per-SIMD-target packing and micro-kernels).
#pragma once

#include <cstddef>

#include "nascent/backends/cpu/gemm.h"

namespace nascent::cpu {

// Per-thread scratch, 64-byte aligned, reused across calls so that packing
// buffers cost no allocation (and no page faults) after the first call.
enum class GemmBuffer { packed_a, packed_b, vector };
void* gemm_scratch(GemmBuffer which, size_t bytes);

// One thread's share: the blocked GEMM on the best SIMD target of this CPU.
void gemm_serial_f32(const GemmArgs& g, const float* a, const float* b,
                     float* c);
void gemm_serial_f64(const GemmArgs& g, const double* a, const double* b,
                     double* c);
void gemm_serial_f16(const GemmArgs& g, const float16* a, const float16* b,
                     float* c);
void gemm_serial_bf16(const GemmArgs& g, const bfloat16* a, const bfloat16* b,
                      float* c);

// The register tile (rows, columns) of the target in use, for partitioning
// work on tile boundaries.
struct GemmTile {
  size_t mr = 1, nr = 1;
};
GemmTile gemm_tile_f32();
GemmTile gemm_tile_f64();

// Matrix-vector products (gemv_kernel.cpp): y[i] (+)= sum_p M(i, p) x[p]
// for i < len, with M(i, p) = mat[i * si + p * sp], x[p] = x[p * sx] and
// y[i] = y[i * sy]. A GEMM with m == 1 (M = B^T) or n == 1 (M = A).
struct GemvArgs {
  int64_t len = 0, k = 0;
  int64_t si = 0, sp = 0, sx = 0, sy = 0;
  bool accumulate = false;
};
void gemv_f32(const GemvArgs& g, const float* mat, const float* x, float* y);
void gemv_f64(const GemvArgs& g, const double* mat, const double* x, double* y);
void gemv_f16(const GemvArgs& g, const float16* mat, const float16* x,
              float* y);
void gemv_bf16(const GemvArgs& g, const bfloat16* mat, const bfloat16* x,
               float* y);

}  // namespace nascent::cpu
