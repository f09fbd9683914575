// Helpers shared by the element-wise conformance cases (unary_cases.cpp,
// binary_cases.cpp): shapes that reach every SIMD tail and the threaded
// path, and a comparison against long double references with error bounds
// in ulps of the type the kernel computes in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "conformance/reference.h"

namespace nascent::conformance {

inline constexpr DType kAllDTypes[] = {DType::f32,  DType::f64,    DType::f16,
                                       DType::bf16, DType::i32,    DType::i64,
                                       DType::u8,   DType::boolean};
inline constexpr DType kFloatDTypes[] = {DType::f32, DType::f64, DType::f16,
                                         DType::bf16};

// 0-d, 0-size, 1-D sizes 1..17 (every tail of a SIMD loop up to 16 f32
// lanes) and small 2-D/3-D shapes.
std::vector<Shape> small_shapes();
// More elements than the element-wise grain, so the work is split across
// threads; 1031 = 64 * 16 + 7 leaves a tail on every row.
inline const Shape kThreadedShape = {67, 1031};
inline constexpr int64_t kLargeSize = 1000003;

// How much the element-wise cases cover. Re-running them once per SIMD
// target (tests/backends/cpu/simd_targets_test.cpp) skips the shapes that
// only add threads and length, since those do not depend on the target.
struct Coverage {
  bool large_shapes = true;
};
inline Coverage& coverage() {
  static Coverage c;
  return c;
}

// The dtypes that also run the threaded shapes: threading does not depend
// on the dtype, but these cover the f32, converted (bf16) and integer loops.
inline bool threaded_dtype(DType dt) {
  return coverage().large_shapes &&
         (dt == DType::f32 || dt == DType::bf16 || dt == DType::i32);
}

// Half an ulp, relative (2^-24 for f32); 0 for integer types and bool.
long double unit_roundoff(DType dtype);

// Row-major values as long double (exact for every dtype).
std::vector<long double> values(const Tensor& t);

// A result as `dtype` stores it: floats beyond the largest finite value
// (plus half an ulp) become inf; integers wrap modulo 2^bits, as C casts
// of the wrapped arithmetic the kernels do.
long double representable(DType dtype, long double v);

// The error a kernel may make. f16 and bf16 compute in f32 and round once
// at the end, so their bound is `ulps` f32 ulps plus half an ulp of the
// storage type. `cond` (per element, may be empty) scales the ulps where
// the function amplifies the rounding of an intermediate.
struct Bound {
  double ulps = 0.5;  // 0.5: correctly rounded.
  std::vector<double> cond;
  // Per element (may be empty), scales the absolute allowance of a few
  // subnormal units where an intermediate in the subnormal range is then
  // multiplied (silu's x * sigmoid(x) far below zero).
  std::vector<double> tiny_scale;
  bool zero_sign = false;  // Also compare the sign of zero results.
};

// Expects `got` to match the exact results `want` (row-major, before
// rounding to got's dtype) within `bound`. NaN must match NaN and inf the
// same inf. `context(i)` describes element i's inputs for failures.
void expect_values(const Tensor& got, const std::vector<long double>& want,
                   const Bound& bound, const std::string& label,
                   const std::function<std::string(size_t)>& context = {});

}  // namespace nascent::conformance
