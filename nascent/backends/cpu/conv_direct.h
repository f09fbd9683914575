// Direct convolution of one input plane with one KH x KW filter, for convs
// with one input channel per group (depthwise, and first layers with C = 1)
// where im2col + GEMM would run a GEMM of depth KH * KW: all overhead.
// SIMD over output columns (Highway, target chosen at run time).
//
// The input plane comes zero-padded by the caller (row stride ld), so the
// kernels never test bounds: output (r, c) and tap (i, j) meet at padded
// element (r * sh + i * dh) * ld + c * sw + j * dw.
#pragma once

#include <cstdint>

namespace nascent::cpu {

struct DirectShape {
  int64_t kh, kw, sh, sw, dh, dw;
  int64_t oh, ow;  // Output plane.
  int64_t ld;      // Row stride of the padded input plane.
};

// out = bias + the correlation of xpad with w; with accumulate, out +=
// the correlation (bias unused).
void direct_forward(const DirectShape& s, const float* xpad, const float* w,
                    float bias, float* out, bool accumulate = false);
void direct_forward(const DirectShape& s, const double* xpad, const double* w,
                    double bias, double* out, bool accumulate = false);

// dxpad += every tap of w times grad_out, scattered back (the adjoint).
void direct_backward_input(const DirectShape& s, const float* grad_out,
                           const float* w, float* dxpad);
void direct_backward_input(const DirectShape& s, const double* grad_out,
                           const double* w, double* dxpad);

// partial[tap * ow + c] += the sum over output rows of grad_out times the
// tap's input, at output column c; the weight gradient of a tap is the sum
// of its ow partial sums (left to the caller, after all images).
void direct_backward_weight(const DirectShape& s, const float* xpad,
                            const float* grad_out, float* partial);
void direct_backward_weight(const DirectShape& s, const double* xpad,
                            const double* grad_out, double* partial);

}  // namespace nascent::cpu
