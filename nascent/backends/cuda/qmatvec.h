// qmatmul's kernels for a few rows of x, reading GGML blocks in place
// (qmatvec.cu); quant.cu sends them the calls they take.
#pragma once

#include <cstdint>
#include <span>

#include "nascent/backends/cuda/context.h"
#include "nascent/core/quant.h"

namespace nascent::cuda {

// The most x rows the mat-vec kernels take; more go through the GEMM.
inline constexpr int64_t kMatVecMaxRows = 8;

struct MatVecArg {
  QuantType type = QuantType::f32;
  const Tensor* w = nullptr;  // u8 [N, row bytes]
  float* y = nullptr;         // [m, N], contiguous
};

// Whether the kernels read weights of this type and alignment with m rows
// of x [m, k] (contiguous, at x).
bool matvec_takes(QuantType type, const Tensor& w, int64_t m, int64_t k,
                  const float* x);

// y = x @ W^T for every arg, on the stream; every arg passed matvec_takes.
void matvec(Context& ctx, const float* x, int64_t m, int64_t k,
            std::span<const MatVecArg> args);

}  // namespace nascent::cuda
