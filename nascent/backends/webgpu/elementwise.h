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
// kernel in the pipeline cache (the dtypes are added to it).
void elementwise(Context& ctx, const char* op, const std::string& key,
                 const std::string& helpers, const std::string& body,
                 std::span<const Tensor* const> inputs, Tensor& out,
                 std::span<const uint32_t> extra = {});

// The word of a float parameter.
uint32_t f32_word(double v);

}  // namespace nascent::webgpu

namespace nascent::webgpu {

// The WGSL expression converting `v` from one dtype to another (copy.cpp),
// and the functions it may call.
std::string convert_expression(const std::string& v, DType from, DType to);
const char* convert_helpers();

}  // namespace nascent::webgpu
