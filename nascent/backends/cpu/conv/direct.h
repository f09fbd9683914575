// conv2d and its two gradients by direct kernels, for convs with one input
// channel per group (depthwise, and first layers with C = 1), where
// im2col + GEMM would run GEMMs of depth KH * KW: all overhead. Planes are
// copied into a zero border first, so the SIMD kernels (Highway, target
// chosen at run time) never test bounds.
#pragma once

#include "nascent/backends/cpu/conv/geometry.h"
#include "nascent/core/op_table.h"

namespace nascent::cpu {

// Needs g.cg() == 1. conv2d: a = x, b = w, out = y; backward_input: a =
// grad_out, b = w, out = grad_x; backward_weight: a = x, b = grad_out,
// out = grad_w. All contiguous.
void conv_direct(ConvOp op, const conv::Geometry& g, const float* a,
                 const float* b, const float* bias, float* out);
void conv_direct(ConvOp op, const conv::Geometry& g, const double* a,
                 const double* b, const double* bias, double* out);

}  // namespace nascent::cpu
