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

// out = bias + the correlation of xpad with w.
void direct_forward(const DirectShape& s, const float* xpad, const float* w,
                    float bias, float* out);
void direct_forward(const DirectShape& s, const double* xpad, const double* w,
                    double bias, double* out);

// dxpad += every tap of w times grad_out, scattered back (the adjoint).
void direct_backward_input(const DirectShape& s, const float* grad_out,
                           const float* w, float* dxpad);
void direct_backward_input(const DirectShape& s, const double* grad_out,
                           const double* w, double* dxpad);

// dw[tap] += the sum over outputs of grad_out times the tap's input.
void direct_backward_weight(const DirectShape& s, const float* xpad,
                            const float* grad_out, float* dw);
void direct_backward_weight(const DirectShape& s, const double* xpad,
                            const double* grad_out, double* dw);

}  // namespace nascent::cpu
