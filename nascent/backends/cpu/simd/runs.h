// Vectorised contiguous runs of the element-wise kernels, compiled for every
// SIMD target Highway knows and picked at run time (unary_simd.cpp,
// binary_simd.cpp, convert_simd.cpp). The strided loops in elementwise.h
// call these for runs whose operands are contiguous or, for binary ops and
// where, a broadcast scalar (stride 0); everything else stays scalar.
//
// The has_* queries say whether a path exists; callers fall back to their
// scalar loop when it does not.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nascent/core/backend.h"
#include "nascent/core/dtype.h"

namespace nascent::cpu::simd {

// Whether the SIMD target in use has f64 vectors (not WASM, in Highway
// 1.0.3); without them f64 runs stay scalar.
bool has_float64();

// f32, f64 (not erf and gelu), f16 and bf16 (computed in f32). pow_scalar
// of f64 only for the exponents with exact short forms (0, +-0.5, +-1, 2,
// 3, -2); f32 takes any exponent (computed in f64 lanes).
bool has_unary(UnaryOp op, DType dtype, const UnaryParams& p);
// The exponents of pow_scalar with exact short forms (x * x, 1 / sqrt(x)).
inline bool is_short_exponent(double e) {
  for (double s : {0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5}) {
    if (e == s) return true;
  }
  return false;
}
void unary(UnaryOp op, DType dtype, const void* x, void* out, int64_t n,
           const UnaryParams& p);

// Arithmetic and comparisons on f32, f64, f16 and bf16 (pow not on f64).
// stride_a and stride_b are 1 (contiguous) or 0 (one broadcast value).
bool has_binary(BinaryOp op, DType dtype);
void binary(BinaryOp op, DType dtype, const void* a, int64_t stride_a,
            const void* b, int64_t stride_b, void* out, int64_t n);

// out[i] = cond[i] ? a[i] : b[i] for elements of 1, 2, 4 or 8 bytes; cond
// is contiguous, a and b have strides 0 or 1.
void where(size_t elem_size, const bool* cond, const void* a, int64_t stride_a,
           const void* b, int64_t stride_b, void* out, int64_t n);

// Conversions among f32, f16 and bf16 (round to nearest even, NaN kept).
bool has_convert(DType from, DType to);
void convert(DType from, DType to, const void* src, void* dst, int64_t n);

}  // namespace nascent::cpu::simd
