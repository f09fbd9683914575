// Dense products through cuBLASLt, described in row-major terms: shared by
// matmul (matmul.cpp) and the convolutions (conv.cu).
#pragma once

#include <cstdint>

#include "nascent/backends/cuda/context.h"
#include "nascent/core/dtype.h"

namespace nascent::cuda {

// A matrix operand: element (i, j) at ptr + i * rs + j * cs (in elements),
// batch b at + b * bs. One of rs, cs must be 1 and the other at least the
// extent it strides over (a BLAS layout); bs may be 0 (shared operand).
struct MatrixRef {
  const void* ptr = nullptr;
  int64_t rs = 0, cs = 0, bs = 0;
};

// C[b] = A[b] @ B[b] + beta * C[b] for b < batch, A [m, k], B [k, n], C
// [m, n] with row stride ldc (column stride 1) and batch stride c_bs.
// f16 and bf16 accumulate in f32, and C is f32 when f32_out is set (else
// of the operands' dtype); f32 uses TF32 tensor cores only when the
// backend allows it; f64 is plain double.
void gemm(Context& ctx, DType dtype, int64_t batch, int64_t m, int64_t n,
          int64_t k, const MatrixRef& a, const MatrixRef& b, void* c,
          int64_t ldc, int64_t c_bs, double beta = 0.0, bool f32_out = false);

// Whether (rs, cs) is a BLAS layout for a rows x cols matrix, after fixing
// the stride of a size-1 axis (which does not matter) to make it one.
bool blas_layout(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs);

}  // namespace nascent::cuda
