// Internals of the packed GEMM shared by gemm.cpp (threading, scratch) and
// gemm/kernel_simd.cpp (per-SIMD-target packing and micro-kernels).
#pragma once

#include <cstddef>

#include "nascent/backends/cpu/gemm/gemm.h"

namespace nascent::cpu {

// Per-thread scratch, 64-byte aligned, reused across calls so that packing
// buffers cost no allocation (and no page faults) after the first call.
enum class GemmBuffer { packed_a, packed_b, vector, shared_b };
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

// Cache blocking of one product (elements): KC, MC and NC, the register
// tile (MR x NR), and the size of one packed KC x NC block of B.
struct GemmPlan {
  size_t kc = 1, mc = 1, nc = 1, mr = 1, nr = 1;
  size_t block_b = 0;
};
GemmPlan gemm_plan_f32(const GemmArgs& g);

// The pieces of a multithreaded f32 GEMM with n <= NC (gemm.cpp): B is
// packed once, KC block `pc / KC` at bp + (pc / KC) * block_b, columns
// [j0, j1) at a time (j0 a multiple of NR), and then rows [i0, i1) of C are
// computed from it, each task packing its own rows of A.
void gemm_pack_b_f32(const GemmArgs& g, const GemmPlan& p, size_t pc, size_t j0,
                     size_t j1, const float* b, float* bp);
void gemm_rows_f32(const GemmArgs& g, const GemmPlan& p, size_t i0, size_t i1,
                   const float* a, const float* bp, float* c);

// Matrix-vector products (gemm/gemv_simd.cpp): y[i] (+)= sum_p M(i, p) x[p]
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
