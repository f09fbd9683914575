// Dense matrix multiply kernels, the engine of matmul and conv2d.
//
// C[m, n] (+)= A[m, k] * B[k, n]. A and B are strided (row stride, column
// stride, in elements; any sign, 0 for broadcast), so transposed views need
// no copy; C is row-major with row stride ldc. With accumulate the product
// is added to C. Runs on the thread pool unless called from inside a worker.
#pragma once

#include <cstdint>

#include "nascent/core/dtype.h"

namespace nascent::cpu {

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  // A[i, p] is a[i * rsa + p * csa] and B[p, j] is b[p * rsb + j * csb]:
  // row and column strides in elements (a row-major A has rsa = k, csa = 1;
  // its transposed view rsa = 1, csa = m).
  int64_t rsa = 0, csa = 0;
  int64_t rsb = 0, csb = 0;
  int64_t ldc = 0;          // C[i, j] is c[i * ldc + j]; ldc >= n.
  bool accumulate = false;  // C += A B instead of C = A B.
};

void gemm_f32(const GemmArgs& g, const float* a, const float* b, float* c);
void gemm_f64(const GemmArgs& g, const double* a, const double* b, double* c);
// Half-precision inputs are widened to f32 while packing; the product
// accumulates and lands in f32.
void gemm_f16(const GemmArgs& g, const float16* a, const float16* b, float* c);
void gemm_bf16(const GemmArgs& g, const bfloat16* a, const bfloat16* b,
               float* c);

}  // namespace nascent::cpu
