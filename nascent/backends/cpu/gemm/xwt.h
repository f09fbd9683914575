// x @ W^T with f32 activations x and weights W stored as f32, f16 or bf16
// (a Linear layer or a LLaMA projection over a batch of rows): the f32 GEMM
// micro-kernel, with W widened to f32 while it is packed (gemm/xwt_simd.cpp).
#pragma once

#include <cstdint>

#include "nascent/core/dtype.h"

namespace nascent::cpu {

// y [m, n] (row stride ldy) = x [m, k] (row stride ldx) @ W^T for W [n, k]
// of `wtype` (f32, f16 or bf16; row stride ldw elements). Runs on the
// thread pool; each y element is one thread's sum, in the same order for
// any thread count.
void gemm_xwt(DType wtype, const float* x, int64_t ldx, const void* w,
              int64_t ldw, float* y, int64_t ldy, int64_t m, int64_t n,
              int64_t k);

}  // namespace nascent::cpu
