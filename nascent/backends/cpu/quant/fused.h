// Several products x @ W_i^T with the same x in one call (the CPU backend's
// own entry point, below the op layer): a LLaMA layer's q, k and v
// projections, or its gate and up ones.
#pragma once

#include <cstdint>
#include <span>

#include "nascent/core/quant.h"

namespace nascent::cpu {

// One weight matrix: n rows of `type` blocks at w (row stride ws bytes),
// and where its product goes: y f32 [m, n] (row stride n).
struct QLinear {
  QuantType type = QuantType::f32;
  const uint8_t* w = nullptr;
  int64_t ws = 0, n = 0;
  float* y = nullptr;
};

// y_i = x @ W_i^T for x f32 [m, k] (contiguous) and every W_i of K = k
// columns. For a few rows of x (generation) all the products share one pool
// job and x is quantized once per activation block size, instead of a job,
// a barrier and a quantization each; more rows go one matrix at a time, as
// qmatmul does.
void qmatmul_fused(const float* x, int64_t m, int64_t k,
                   std::span<const QLinear> ms);

}  // namespace nascent::cpu
