// Element-wise kernels (internal): one thread per element of the output's
// shape, every operand read through its own offset and strides (broadcast
// views have stride 0), so strided inputs and outputs need no copies.
#pragma once

#include <span>
#include <string>

#include "nascent/backends/webgpu/context.h"

namespace nascent::webgpu {

// Runs `out[i] = body` over out's shape. In `body`, a, b and c are the
// inputs' values of element i (as wgsl_type of their dtype) and X(k) reads
// extra parameter word k as an f32, XI(k) as an i32 and XU(k) as a u32;
// `helpers` holds any WGSL functions the body calls. `key` names the
// kernel in the pipeline cache (the dtypes are added to it). Parameter
// word Z is 0 (math_wgsl()'s keep() reads it).
// Operands and the output may be i64 (as vec2<u32>), with int64_wgsl() in
// the helpers where the body needs it.
void elementwise(Context& ctx, const char* op, const std::string& key,
                 const std::string& helpers, const std::string& body,
                 std::span<const Tensor* const> inputs, Tensor& out,
                 std::span<const uint32_t> extra = {});

// The word of a float parameter.
uint32_t f32_word(double v);

// WGSL functions for elementwise() bodies (math.cpp): exp_f, expm1_f,
// log_f, log1p_f, sin_f, cos_f, tanh_f, sigmoid_f, silu_f, gelu_f,
// gelu_tanh_f, erf_f and pow_f, all on f32, within the conformance bounds.
const char* math_wgsl();

// WGSL functions on i64 values held as vec2<u32> (low word, high word)
// (int64.cpp): i64_of(i32), i64_add, i64_sub, i64_neg, i64_mul (wrapping),
// i64_lt (signed), i64_nz, f32_to_i64 (saturating, NaN 0) and i64_to_f32
// (rounded to nearest even).
const char* int64_wgsl();

}  // namespace nascent::webgpu

namespace nascent::webgpu {

// The WGSL expression converting `v` from one dtype to another (copy.cpp),
// and the functions it may call.
std::string convert_expression(const std::string& v, DType from, DType to);
const char* convert_helpers();

}  // namespace nascent::webgpu
