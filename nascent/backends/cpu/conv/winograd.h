// 3x3 convolutions with stride 1 and no dilation by Winograd's minimal
// filtering F(2x2, 3x3) (Lavin & Gray, 2015): each 2x2 output tile costs 16
// multiplies per input channel instead of 36. The input is cut into
// overlapping 4x4 tiles and transformed (V = B^T d B), the weights once per
// call (U = G g G^T), then for each of the 16 transform positions one GEMM
// multiplies U [Og, Cg] by V [Cg, tiles], and the products come back
// through A^T m A. The GEMMs do 4/9 of im2col's work.
//
// Rounding: the transforms add and halve a few terms, so results differ
// from a direct sum by a few units in the last place of the summed
// magnitudes, like any reordering of the sum.
#pragma once

#include "nascent/backends/cpu/conv/geometry.h"

namespace nascent::cpu {

// out = conv2d(x, w) + bias (bias may be null) for a geometry with 3x3
// kernels, stride 1 and no dilation; all tensors contiguous.
void winograd_conv3x3(const conv::Geometry& g, const float* x, const float* w,
                      const float* bias, float* out);
void winograd_conv3x3(const conv::Geometry& g, const double* x, const double* w,
                      const double* bias, double* out);

}  // namespace nascent::cpu
