// Dense matrix multiply kernels, the engine of matmul and conv2d.
//
// C[m, n] (+)= A[m, k] * B[k, n]. A and B are strided (row stride, column
// stride, in elements), so transposed views need no copy; C is row-major
// with row stride ldc. With accumulate the product is added to C. Runs on
// the thread pool unless called from inside a worker.
#pragma once

#include <cstdint>

namespace nascent::cpu {

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  int64_t rsa = 0, csa = 0;  // A strides.
  int64_t rsb = 0, csb = 0;  // B strides.
  int64_t ldc = 0;
  bool accumulate = false;
};

void gemm_f32(const GemmArgs& g, const float* a, const float* b, float* c);
void gemm_f64(const GemmArgs& g, const double* a, const double* b, double* c);

}  // namespace nascent::cpu
